"""Opens a run directory's files for the scripts beside it, compressed or
not: NAME, else NAME.zst (through the zstd command: Debian's python has no
zstd module) or NAME.gz, as homatb report reads them (rundir.OpenRunFile).
"""

import contextlib
import gzip
import io
import os
import subprocess


@contextlib.contextmanager
def open_run_file(run, name):
    """Yields a text file of run/name, decompressing NAME.zst or NAME.gz
    when the plain file is absent."""
    path = os.path.join(run, name)
    if os.path.exists(path):
        with open(path, newline="") as f:
            yield f
        return
    if os.path.exists(path + ".zst"):
        p = subprocess.Popen(["zstd", "-dcq", path + ".zst"], stdout=subprocess.PIPE)
        try:
            yield io.TextIOWrapper(p.stdout, newline="")
        finally:
            p.stdout.close()
            if p.wait() != 0:
                raise OSError(f"zstd -dc {path}.zst exited {p.returncode}")
        return
    if os.path.exists(path + ".gz"):
        with gzip.open(path + ".gz", "rt", newline="") as f:
            yield f
        return
    raise FileNotFoundError(f"{path}: neither it nor {name}.zst nor {name}.gz")
