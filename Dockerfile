# Spica runtime image: Debian + the very CPython Spica's venv was made from.
#
# Why it looks like this:
# - No image registry is reachable here, so there is no `FROM debian` or `FROM python`. The base
#   (BASE_IMAGE) is a Debian rootfs made with debootstrap from Debian's package mirror, holding
#   exactly the shared libraries the interpreter links against, and `podman import`ed.
#   containers/build-image.sh makes both images, and caches them in podman's store.
# - The image carries the interpreter, not the dependencies: the repo and its venv
#   (<repo>/.venv, 2.2 GB) are bind-mounted at their host paths (runner/container.py does it).
#   A venv only runs on the interpreter it was made from, so the build context holds a copy of
#   that interpreter's install (sys.base_prefix, without its own site-packages and test suite)
#   and it lands at the same path. The image stays ~300 MB and is rebuilt only when the
#   interpreter or this file changes, never when a dependency moves.
# - Same idea as a pyxis/enroot deployment on a SLURM cluster: image from the site's registry,
#   repo and venv on the shared file system, mounted with --container-mounts.
#
# Build: bash containers/build-image.sh   (prints the image name, e.g. localhost/spica-runtime:<hash>)
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
ARG PYTHON_PREFIX
COPY python/ ${PYTHON_PREFIX}/
ENV PATH=${PYTHON_PREFIX}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 \
    PYTHONUNBUFFERED=1
# Fails the build if a shared library of the interpreter or its C modules is missing.
RUN python3 -c "import ssl, sqlite3, ctypes, lzma, bz2, zlib, uuid, readline, decimal, curses; print('python', __import__('sys').version.split()[0], 'ok')"
CMD ["python3"]
