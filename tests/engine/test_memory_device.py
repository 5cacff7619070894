"""The gauge watches the model's card (issue 19 item 8), with a stand-in NVML of two
devices: a small module object with the pynvml functions the probe calls."""

from __future__ import annotations

import types

import pytest

from glmdesk.engine.memory import MIB, MemoryProbe, device_identity

GIB = 1024 * MIB


class NVMLError(Exception):
    pass


class NVMLError_LibraryNotFound(NVMLError):  # noqa: N801 (pynvml's name)
    pass


def two_card_nvml() -> types.SimpleNamespace:
    """Two cards as NVML numbers them: index 0 (UUID GPU-aaaa) and index 1 (GPU-bbbb)."""
    cards = [
        {
            "uuid": "GPU-aaaa",
            "bus": "00000000:1A:00.0",
            "name": "Card A",
            "used": 10 * GIB,
            "total": 80 * GIB,
        },
        {
            "uuid": "GPU-bbbb",
            "bus": "00000000:3B:00.0",
            "name": "Card B",
            "used": 50 * GIB,
            "total": 141 * GIB,
        },
    ]
    state = {"init": 0, "shutdown": 0}

    def find(key: str, value: str):
        for card in cards:
            if card[key] == value:
                return card
        raise NVMLError(f"no device with {key} {value}")

    def by_index(i: int):
        if not 0 <= i < len(cards):
            raise NVMLError("invalid index")
        return cards[i]

    return types.SimpleNamespace(
        NVMLError=NVMLError,
        NVMLError_LibraryNotFound=NVMLError_LibraryNotFound,
        nvmlInit=lambda: state.__setitem__("init", state["init"] + 1),
        nvmlShutdown=lambda: state.__setitem__("shutdown", state["shutdown"] + 1),
        nvmlDeviceGetCount=lambda: len(cards),
        nvmlDeviceGetHandleByIndex=by_index,
        nvmlDeviceGetHandleByUUID=lambda uuid: find("uuid", uuid),
        nvmlDeviceGetHandleByPciBusId=lambda bus: find("bus", bus),
        nvmlDeviceGetName=lambda card: card["name"],
        nvmlDeviceGetMemoryInfo=lambda card: types.SimpleNamespace(used=card["used"], total=card["total"]),
        state=state,
    )


def test_uuid_names_the_card_when_visible_devices_renumber():
    """CUDA_VISIBLE_DEVICES=1: torch's cuda:0 is NVML's index 1; the UUID finds it."""
    probe = MemoryProbe("cuda:0", uuid="GPU-bbbb", nvml=two_card_nvml())
    reading = probe.read(weights_bytes=8 * GIB)
    assert reading.source == "gpu" and reading.fallback is None
    assert reading.device == "Card B" and reading.used_mib == 50 * 1024 and reading.total_mib == 141 * 1024
    assert reading.other_mib == 42 * 1024


def test_pci_bus_id_when_no_uuid():
    probe = MemoryProbe("cuda:0", pci_bus_id="00000000:3B:00.0", nvml=two_card_nvml())
    assert probe.read().device == "Card B"


def test_unknown_uuid_falls_back_to_the_index():
    probe = MemoryProbe("cuda:1", uuid="GPU-gone", nvml=two_card_nvml())
    assert probe.read().device == "Card B"
    assert MemoryProbe("cuda:7", nvml=two_card_nvml()).read().device == "Card A"


def test_set_device_moves_the_gauge_to_the_models_card():
    nvml = two_card_nvml()
    probe = MemoryProbe(nvml=nvml)  # before a model: the first card
    assert probe.read().device == "Card A"
    probe.set_device("cuda:1")  # the load put the model on cuda:1
    assert probe.read().device == "Card B"
    assert nvml.state["shutdown"] == 1 and nvml.state["init"] == 2


def test_device_identity_without_a_cuda_device():
    assert device_identity("cpu") == (None, None)
    assert MemoryProbe(3).device == "cuda:3"


@pytest.mark.skipif("not __import__('torch').cuda.is_available()")
def test_real_card_found_by_uuid():
    """On a CUDA machine: torch's device and NVML's handle by UUID are the same card."""
    import pynvml
    import torch

    uuid, pci = device_identity("cuda:0")
    assert uuid and uuid.startswith("GPU-")
    probe = MemoryProbe("cuda:0")
    probe.set_device("cuda:0")
    reading = probe.read()
    assert reading.source == "gpu" and reading.device == torch.cuda.get_device_name(0)
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByUUID(uuid)
    assert pynvml.nvmlDeviceGetName(handle) == torch.cuda.get_device_name(0)
    if pci:
        assert pynvml.nvmlDeviceGetPciInfo(pynvml.nvmlDeviceGetHandleByPciBusId(pci)).busId
