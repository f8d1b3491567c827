"""What the command line imports: the heavy optional packages load only for the commands
that use them (checked in a fresh interpreter, through ``sys.modules``)."""

import json
import subprocess
import sys

HEAVY = ("pandas", "matplotlib", "dask", "scipy", "tqdm")


def _loaded(code: str) -> list:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_importing_the_cli_imports_no_heavy_package():
    loaded = _loaded("import json, sys\nimport simcollective.cli\n"
                     f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY + ('numba',))!r})))")
    assert loaded == []


def test_a_dense_run_reaches_its_first_event_without_heavy_packages():
    # the packages imported when SimPy's kernel is first entered, for a 16-rank dense ring
    code = (
        "import json, os, sys\n"
        "import simpy.core\n"
        "def run(self, until=None):\n"
        f"    print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY + ('numba',))!r})))\n"
        "    sys.stdout.flush()\n"
        "    os._exit(0)\n"
        "simpy.core.Environment.run = run\n"
        "from simcollective.cli import main\n"
        "main(['run', '--topology', 'abci', '--nodes', '4', '--algorithm', 'ring', '--elements', '4096', '--quiet'])\n")
    assert _loaded(code) == []
