import sys
from pathlib import Path

# tests import the corpus helpers as a plain module
sys.path.insert(0, str(Path(__file__).parent))
