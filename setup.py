"""Package discovery: every package under kimi_cli/, tools/ and engine/, found rather than listed.

`tools/` and `engine/` are top-level folders installed as `kimi_cli.tools` and `kimi_cli.engine`
(the mapping is in pyproject.toml). Metadata lives in pyproject.toml; only the package list is computed.
"""

from setuptools import find_packages, setup

MAPPED = {"kimi_cli.tools": "tools", "kimi_cli.engine": "engine"}

packages = find_packages(include=["kimi_cli", "kimi_cli.*"])
for name, folder in MAPPED.items():
    packages += [name, *(f"{name}.{sub}" for sub in find_packages(folder))]

setup(packages=sorted(set(packages)))
