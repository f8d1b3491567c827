"""numba's cache of a kernel keeps the compiled code of the kernels it calls inside its own entry
and checks only its own source file: a cache older than its callees, mixed with their new code,
can write out of bounds. Each file of cached kernels that calls kernels of other files carries
the digest of those files' sources in a ``# numba cache: callees DIGEST`` line, so a change to a
callee fails this test until the caller's line is updated (an edit of the caller, which makes
numba compile it anew)."""

import hashlib
from pathlib import Path

import pytest

NETWORK = Path(__file__).resolve().parents[2] / "simcollective" / "network"

#: file of cached kernels -> the files whose kernels it calls (their own lines chain the rest)
CALLEES = {
    "kernels.py": ("filling.py",),
    "bulk_kernels.py": ("bulk_rows.py", "filling.py", "kernels.py"),
    "replay_flows.py": ("filling.py", "kernels.py", "replay_heaps.py"),
    "replay_bulk.py": ("bulk_kernels.py", "bulk_rows.py", "replay_flows.py", "replay_heaps.py"),
    "replay_kernels.py": ("replay_borrow.py", "replay_bulk.py", "replay_flows.py", "replay_heaps.py"),
}


def callees_line(caller: str) -> str:
    digest = hashlib.sha256(b"".join((NETWORK / f).read_bytes() for f in CALLEES[caller])).hexdigest()[:12]
    return f"# numba cache: callees {digest}"


@pytest.mark.parametrize("caller", list(CALLEES))
def test_a_file_of_cached_kernels_names_the_digest_of_its_callees(caller):
    text = (NETWORK / caller).read_text()
    line = callees_line(caller)
    assert line in text, (f"{caller}: a kernel it calls changed; replace its '# numba cache: callees' line with "
                          f"{line!r} (numba then compiles its kernels anew)")
