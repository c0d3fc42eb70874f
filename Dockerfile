# Spica's images: Debian + the very CPython Spica's venv was made from, in three stages
# (build-image.sh picks one with --target; `spica` is its default).
#
# - `spica`: self-contained. Spica and its locked dependencies are
#   installed in /opt/spica, entrypoint `spica`, user `spica` (uid 10001). A job needs nothing
#   mounted but its plan, its results folder and the cache:
#     podman run --rm --network=none -v PLAN_DIR:/plans:ro -v OUT:/out:U IMAGE run-plan /plans/p.yaml -o /out
#   The wheels come from the wheel cache bin/setup fills (~/.cache/spica/wheels), bind-mounted
#   into the build (`podman build -v WHEELS:/wheels:ro`) and installed with --no-index: the
#   build needs no network. The dependency layer depends only on the lock files, so a source
#   change rebuilds only the last, small layer.
# - `planner`: the `spica` stage with the AI Configurator of Dynamo's dynamo-planner container,
#   which predates the memory model (`aiconfigurator.sdk.memory`): Spica skips the KV filter
#   there and refuses kv_load_ratio. 0.9.0 is a placeholder on PyPI that fetches from an index
#   this machine cannot reach; 0.8.0 is the nearest real release without the module.
#   build-image.sh --planner fetches its wheel into the wheel cache before the (offline) build.
# - `interpreter`: the interpreter only, for a shared-file-system site: the repo and its venv
#   are bind-mounted at their host paths (runner/container.py, mode "shared-fs"), as with a
#   venv on the cluster's shared file system and an image from the site's registry.
#
# No image registry is reachable here, so there is no `FROM debian` or `FROM python`: the base
# (BASE_IMAGE) is a Debian rootfs made with debootstrap holding exactly the shared libraries the
# interpreter links against, `podman import`ed. A venv only runs on the interpreter it was made
# from, so the build context holds a copy of that interpreter's install (sys.base_prefix,
# without its own site-packages and test suite) and it lands at the same path.
#
# Build: bash containers/build-image.sh [--shared-fs | --planner] [--export FILE]   (prints the image name)
ARG BASE_IMAGE
FROM ${BASE_IMAGE} AS interpreter
ARG PYTHON_PREFIX
COPY python/ ${PYTHON_PREFIX}/
ENV PATH=${PYTHON_PREFIX}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 \
    PYTHONUNBUFFERED=1
# Host paths are mounted at the same path inside; one under /root must be reachable by the
# job's non-root user, so /root may be traversed (not listed). Fails the build if a shared
# library of the interpreter or its C modules is missing.
RUN chmod 0711 /root && python3 -c "import ssl, sqlite3, ctypes, lzma, bz2, zlib, uuid, readline, decimal, curses; print('python', __import__('sys').version.split()[0], 'ok')"
CMD ["python3"]

FROM interpreter AS spica
RUN groupadd --gid 10001 spica && useradd --uid 10001 --gid spica --create-home --shell /usr/sbin/nologin spica
COPY locks/ /opt/spica/locks/
RUN python3 -m venv /opt/spica && \
    /opt/spica/bin/python -m pip install --disable-pip-version-check --no-cache-dir --quiet --no-deps \
      --no-compile --no-index --find-links /wheels \
      -r /opt/spica/locks/requirements-nodeps.txt -r /opt/spica/locks/requirements.lock
COPY src/ /opt/spica/src/
# In place, like bin/setup's editable install (Spica finds its Hydra groups in conf/ beside its
# package), through setuptools' develop: pip's editable build needs `wheel`, which no lock holds.
RUN cd /opt/spica/src && /opt/spica/bin/python -W ignore -c "from setuptools import setup; setup()" develop --no-deps --quiet && \
    /opt/spica/bin/spica --help >/dev/null
ENV PATH=/opt/spica/bin:${PATH}
USER spica
WORKDIR /home/spica
ENTRYPOINT ["spica"]
CMD []

FROM spica AS planner
ARG PLANNER_AIC_VERSION=0.8.0
USER root
RUN /opt/spica/bin/python -m pip uninstall --disable-pip-version-check --quiet -y aiconfigurator aiconfigurator-core && \
    /opt/spica/bin/python -m pip install --disable-pip-version-check --no-cache-dir --quiet --no-deps --no-compile \
      --no-index --find-links /wheels aiconfigurator==${PLANNER_AIC_VERSION} && \
    /opt/spica/bin/python -c "import importlib.util as u; assert u.find_spec('aiconfigurator.sdk.memory') is None"
USER spica
