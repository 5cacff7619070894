"""glmdesk: a desktop chat application for ChatGLM-family language models.

Importing glmdesk sets ``OMP_WAIT_POLICY=PASSIVE`` unless the environment already names a
policy: OpenMP threads (torch's and llama.cpp's) that wait at the end of a parallel region
then sleep instead of spinning, so on a machine where another program keeps a core busy
they no longer take time from the thread they wait for. OpenMP reads the variable once,
when its runtime loads with torch or llama.cpp, so it is set here, before either is
imported. Measured in ``benchmarks/background_load.py`` (with one of 2 cores busy: 0.97x
the best fixed thread count with the adaptive count, against 0.67x spinning; quiet: no
slower). ``OMP_WAIT_POLICY=ACTIVE`` in the environment keeps threads spinning.
"""

import os as _os

_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"
