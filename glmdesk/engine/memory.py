"""Memory readings for the live gauge: GPU through NVML, else this process on the CPU.

No Qt here. :class:`MemoryProbe` never raises: every NVML failure (``pynvml`` not
installed, NVML library not found, driver absent, no device, a device lost while
running) turns into a CPU reading whose ``fallback`` says why.

A reading costs one ``nvmlDeviceGetMemoryInfo`` call (tens of microseconds) or one
``psutil`` ``memory_info`` call (about 20 microseconds); ``nvmlInit`` runs once,
lazily, and can be run ahead of time on a background thread with :meth:`MemoryProbe.initialise`.

Sources: NVIDIA Management Library reference (``nvmlDeviceGetMemoryInfo``),
nvidia-ml-py (``pynvml``), psutil ``Process.memory_info``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

MIB = 1024 * 1024

#: Why a reading comes from the CPU; ``None`` when it comes from the GPU.
FALLBACK_REASONS = (
    "pynvml_missing",  # nvidia-ml-py is not installed
    "library_not_found",  # libnvidia-ml.so / nvml.dll not found (no NVIDIA driver)
    "driver_error",  # NVML present but the driver did not answer
    "no_device",  # NVML works but reports no GPU
    "probing",  # initialisation still running on another thread
)

_NOTES = {
    "pynvml_missing": "CPU, no GPU found (nvidia-ml-py is not installed)",
    "library_not_found": "CPU, no GPU found (no NVIDIA driver)",
    "driver_error": "CPU, no GPU found (the NVIDIA driver did not answer)",
    "no_device": "CPU, no GPU found",
    "probing": "CPU (looking for a GPU)",
}


@dataclass(frozen=True)
class MemoryReading:
    """One memory sample.

    Attributes:
        source: ``gpu`` (NVML, device-wide) or ``cpu`` (this process's resident set).
        device: Device name (``NVIDIA H200``) or ``CPU``.
        used_mib: Memory in use, in MiB (GPU: whole device; CPU: this process's RSS).
        total_mib: Capacity, in MiB (GPU memory, or system RAM).
        weights_mib: Model weights, in MiB (as reported by the loader).
        kv_mib: KV cache held by the current answer, in MiB.
        other_mib: ``used - weights - kv`` (activations, allocator slack, runtime,
            other processes on the GPU), in MiB, never below 0.
        fallback: ``None`` for a GPU reading, else one of :data:`FALLBACK_REASONS`.
        note: English sentence for the terminal front end and logs.
    """

    source: str
    device: str
    used_mib: float
    total_mib: float
    weights_mib: float = 0.0
    kv_mib: float = 0.0
    other_mib: float = 0.0
    fallback: str | None = None
    note: str = ""


def device_identity(device: str) -> tuple[str | None, str | None]:
    """``(NVML UUID, PCI bus id)`` of a torch CUDA device such as ``cuda:1``.

    torch numbers the devices it can see (``CUDA_VISIBLE_DEVICES`` renumbers them);
    NVML numbers every device on the machine. The UUID (``GPU-`` + torch's
    ``get_device_properties(i).uuid``) and the PCI bus id name the same card in both.
    Call it after the model is on the device (it queries CUDA). Never raises.

    Returns:
        ``(None, None)`` for a CPU device or when CUDA cannot say.
    """
    if not device.startswith("cuda"):
        return None, None
    try:
        import torch

        if not torch.cuda.is_available():
            return None, None
        index = int(device.split(":", 1)[1]) if ":" in device else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        uuid = getattr(props, "uuid", None)
        bus = getattr(props, "pci_bus_id", None)
        pci = None
        if bus is not None:
            domain, dev = getattr(props, "pci_domain_id", 0), getattr(props, "pci_device_id", 0)
            pci = f"{domain:08X}:{bus:02X}:{dev:02X}.0"
        return (f"GPU-{uuid}" if uuid else None), pci
    except Exception:
        return None, None


class MemoryProbe:
    """Reads memory for the gauge; NVML is initialised at most once per device.

    The card is found by its UUID, else its PCI bus id, else its index (the same
    as torch's only without ``CUDA_VISIBLE_DEVICES``).

    Args:
        device: The model's torch device (``cuda:1``) or its index; before a model
            is loaded, ``cuda:0``. :meth:`set_device` changes it.
        uuid: NVML UUID of the card (``GPU-...``); found from ``device`` by
            :meth:`set_device`.
        pci_bus_id: PCI bus id of the card (``00000000:3B:00.0``).
        nvml: The NVML binding module (default: ``pynvml`` from nvidia-ml-py); tests
            pass a stand-in with the same functions.
    """

    def __init__(
        self,
        device: str | int = "cuda:0",
        *,
        uuid: str | None = None,
        pci_bus_id: str | None = None,
        nvml=None,
    ) -> None:
        self.device = f"cuda:{device}" if isinstance(device, int) else device
        self.uuid = uuid
        self.pci_bus_id = pci_bus_id
        self._binding = nvml
        self._lock = threading.Lock()
        self._probed = False
        self._nvml = None  # the pynvml module once nvmlInit succeeded
        self._handle = None
        self._device_name = "GPU"
        self._fallback: str | None = None
        self._process = None

    @property
    def device_index(self) -> int:
        """torch's index of the device (0 when none is given)."""
        tail = self.device.split(":", 1)[1] if ":" in self.device else "0"
        return int(tail) if tail.isdigit() else 0

    def set_device(self, device: str) -> None:
        """Watch the card the model was loaded on (``cuda:N`` from the load).

        Resolves the card's UUID and PCI bus id through torch, then reads that card
        from the next reading on. Never raises.
        """
        uuid, pci = device_identity(device)
        with self._lock:
            if self._nvml is not None:
                self._shutdown(self._nvml)
            self.device, self.uuid, self.pci_bus_id = device, uuid, pci
            self._nvml = self._handle = None
            self._fallback = None
            self._probed = False

    @property
    def fallback(self) -> str | None:
        """Why readings come from the CPU (``None`` for GPU, ``probing`` until initialised)."""
        if not self._probed:
            return "probing"
        return self._fallback

    def initialise(self) -> None:
        """Import ``pynvml`` and initialise NVML once; safe to call from any thread.

        Never raises. Later calls return at once.
        """
        with self._lock:
            if self._probed:
                return
            try:
                self._fallback = self._init_nvml()
            except Exception:  # an NVML binding bug must not reach the user either
                self._fallback = "driver_error"
                self._nvml = None
                self._handle = None
            self._probed = True

    def _init_nvml(self) -> str | None:
        pynvml = self._binding
        if pynvml is None:
            try:
                import pynvml
            except Exception:
                return "pynvml_missing"
        if pynvml is None:  # sys.modules["pynvml"] = None also lands here
            return "pynvml_missing"
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError_LibraryNotFound:  # pyright: ignore[reportAttributeAccessIssue] - made at import by pynvml
            return "library_not_found"
        except pynvml.NVMLError:
            return "driver_error"
        try:
            count = pynvml.nvmlDeviceGetCount()
            if count < 1:
                self._shutdown(pynvml)
                return "no_device"
            self._handle = self._find_handle(pynvml, count)
            name = pynvml.nvmlDeviceGetName(self._handle)
            self._device_name = name.decode() if isinstance(name, bytes) else str(name)
        except pynvml.NVMLError:
            self._shutdown(pynvml)
            self._handle = None
            return "driver_error"
        self._nvml = pynvml
        return None

    def _find_handle(self, pynvml, count: int):
        """The card's handle: by UUID, else PCI bus id, else torch's index."""
        for lookup, key in (
            (getattr(pynvml, "nvmlDeviceGetHandleByUUID", None), self.uuid),
            (getattr(pynvml, "nvmlDeviceGetHandleByPciBusId", None), self.pci_bus_id),
        ):
            if lookup is not None and key:
                try:
                    return lookup(key)
                except pynvml.NVMLError:
                    pass
        index = self.device_index if 0 <= self.device_index < count else 0
        return pynvml.nvmlDeviceGetHandleByIndex(index)

    @staticmethod
    def _shutdown(pynvml) -> None:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass

    def read(self, weights_bytes: int = 0, kv_bytes: int = 0) -> MemoryReading:
        """Take one reading; never raises.

        Initialises NVML on first use unless :meth:`initialise` is running on another
        thread, in which case a CPU reading with fallback ``probing`` comes back at once.

        Args:
            weights_bytes: Bytes of model weights (from the loader), in bytes.
            kv_bytes: Bytes of KV cache held (from the last chunk), in bytes.
        """
        if not self._probed:
            if self._lock.acquire(blocking=False):
                self._lock.release()
                self.initialise()
            else:
                return self._cpu_reading(weights_bytes, kv_bytes, "probing")
        if self._nvml is not None and self._handle is not None:
            try:
                info = self._nvml.nvmlDeviceGetMemoryInfo(self._handle)
                used, total = int(info.used), int(info.total)  # c_ulonglong fields, read as ints
                return _split("gpu", self._device_name, used, total, weights_bytes, kv_bytes, None)
            except Exception:  # NVMLError (GPU lost, driver reset) or a binding error
                self._nvml = None
                self._handle = None
                self._fallback = "driver_error"
        return self._cpu_reading(weights_bytes, kv_bytes, self._fallback or "no_device")

    def _cpu_reading(self, weights_bytes: int, kv_bytes: int, fallback: str) -> MemoryReading:
        used = total = 0
        try:
            import psutil

            if self._process is None:
                self._process = psutil.Process()
            used = self._process.memory_info().rss
            total = psutil.virtual_memory().total
        except Exception:
            pass
        return _split("cpu", "CPU", used, total, weights_bytes, kv_bytes, fallback)

    def close(self) -> None:
        """Shut NVML down if this probe started it; never raises."""
        with self._lock:
            if self._nvml is not None:
                self._shutdown(self._nvml)
            self._nvml = None
            self._handle = None


def _split(
    source: str,
    device: str,
    used: int,
    total: int,
    weights_bytes: int,
    kv_bytes: int,
    fallback: str | None,
) -> MemoryReading:
    weights = max(0, weights_bytes) / MIB
    kv = max(0, kv_bytes) / MIB
    used_mib = used / MIB
    return MemoryReading(
        source=source,
        device=device,
        used_mib=used_mib,
        total_mib=total / MIB,
        weights_mib=weights,
        kv_mib=kv,
        other_mib=max(0.0, used_mib - weights - kv),
        fallback=fallback,
        note=_NOTES.get(fallback, "") if fallback else "",
    )
