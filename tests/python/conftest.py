"""conftest.py - the mgc package from this source tree, the built library and CLI (set by tests/python.cmake)."""
import os
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(SRC / "python"))
