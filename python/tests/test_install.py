"""The documented installation paths work offline: `pip install` into a venv that sees the
system's (apt's) numpy, and PYTHONPATH=python with the package's own library lookup."""
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.dirname(HERE)          # python/
ROOT = os.path.dirname(PKG)          # the source tree
LIB = os.path.join(ROOT, "build", "lib", "libgraphpass.so")

SMOKE = """
import numpy as np, graphpass as gp
m = gp.parse("def @main(%x: Tensor[(3), float32]) { nn.relu(%x) }")
(y,) = gp.evaluate(gp.optimize(m, opt_level=3), np.array([-1, 0, 2], np.float32))
assert y.tolist() == [0, 0, 2], y
assert "FoldConstant" in [p.name for p in gp.list_passes()]
print(gp.__file__)
print(gp.library_path())
"""


def _env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "GRAPHPASS_LIBRARY", "GRAPHPASS_PLUGIN_PATH", "PIP_INDEX_URL")}
    env.update(extra)
    return env


def test_pythonpath_and_own_lookup(tmp_path):
    """PYTHONPATH=python, no environment: the package finds build/lib and build/plugins itself."""
    r = subprocess.run([sys.executable, "-c", SMOKE], cwd=str(tmp_path), env=_env(PYTHONPATH=PKG),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    mod_file, lib = r.stdout.split()
    assert mod_file.startswith(PKG) and os.path.realpath(lib) == os.path.realpath(LIB)


def test_pip_install_into_a_venv_offline(tmp_path):
    """README's commands: a venv with the system site packages, pip install --no-index
    --no-build-isolation (no network, setuptools and numpy from apt)."""
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode != 0:
        pytest.skip("no pip for %s (Debian: python3-pip)" % sys.executable)
    src = tmp_path / "src"
    shutil.copytree(PKG, str(src), ignore=shutil.ignore_patterns("tests", "build", "*.egg-info", "__pycache__"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
                   check=True, timeout=60)
    py = str(venv / "bin" / "python")
    r = subprocess.run([sys.executable, "-m", "pip", "--python", py, "install", "--no-index", "--no-build-isolation",
                        "--no-compile", "--disable-pip-version-check", "-q", str(src)],
                       env=_env(PIP_NO_INDEX="1"), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([py, "-c", SMOKE], cwd=str(tmp_path), env=_env(GRAPHPASS_LIBRARY=LIB),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0].startswith(str(venv))
    # without GRAPHPASS_LIBRARY, through pkg-config (the build tree's graphpass-uninstalled.pc)
    if shutil.which("pkg-config") and os.path.exists(os.path.join(ROOT, "build", "graphpass-uninstalled.pc")):
        r = subprocess.run([py, "-c", SMOKE], cwd=str(tmp_path),
                           env=_env(PKG_CONFIG_PATH=os.path.join(ROOT, "build")),
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert os.path.realpath(r.stdout.split()[1]) == os.path.realpath(LIB)
