"""The Python and library versions an interpreter offers.

The host imports it (the local sandbox runs scripts with this interpreter); a Docker sandbox runs it
with its image's own interpreter (``python -I versions.py`` prints the versions as JSON), so the
prompts name what the scripts will meet, not what this machine has installed.
"""

import json
import sys
from importlib import metadata

# What a solution may import; the prompts quote these versions.
LIBRARIES = ("numpy", "pandas", "scikit-learn", "scipy", "scikit-image", "statsmodels", "pillow", "torch",
             "lightgbm", "xgboost", "matplotlib")


def library_versions() -> dict:
    """Python and library versions this interpreter offers (installed ones only)."""
    versions = {"python": sys.version.split()[0]}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


if __name__ == "__main__":
    print(json.dumps(library_versions()))
