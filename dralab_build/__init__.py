"""The lab's production build: what `make mirror` puts into a real workshop's offline mirror, not test code.

binaries/      upstream binaries built from the Go module proxy (the mirror's files and images hold them;
               the integration tier runs them too)
mirror/        the offline mirror: the files tree, the images, mirror.json
wheels.py      the wheel of the node programs and its dependencies
settings_docs.py  the generated settings and feature tables of README.md and docs/conventions.md
role_vars.py   versions and image names read from the roles' defaults
cache.py       where builds are cached ($DRALAB_CACHE) and the lock that serialises them

Run from the repository root: python -m dralab_build.binaries, python -m dralab_build.mirror, ...
"""
