# llm-stream-exporter container image (docs/deploy.md, "Container image").
#
# Build stage: Debian 12 (bookworm) with the same scripts CI runs:
# scripts/setup.sh installs the build dependencies from Debian's archive,
# scripts/build.sh configures CMake into build/ and builds only
# build/exporter/llm_stream_exporter (no tests, no benchmarks). The run stage is
# debian-slim with only the shared libraries the binary links (found with
# ldd + dpkg -S in the build stage), a numeric non-root user, and nothing it
# needs to write: a read-only root filesystem works.
#
# scripts/image.sh builds it (docker, or buildah where no Docker engine runs),
# passing VERSION, REVISION and CREATED for the OCI labels and --version, and
# checks the image it built (non-root, read-only root, /metrics with probe
# series, labels). By hand:
#
#   docker build -t llm-stream-exporter \
#     --build-arg VERSION=0.1.0 --build-arg REVISION="$(git rev-parse --short=12 HEAD)" .
#   docker run --read-only --tmpfs /tmp -p 9687:9687 \
#     -v "$PWD/config.yaml:/etc/llm-stream-exporter/config.yaml:ro" llm-stream-exporter
#
# tests/deploy/check_dockerfile.py checks this file's policy and lints it.

# Debian 12.11 = bookworm, the release CI and the developers build on.
ARG DEBIAN_VERSION=12.11

FROM debian:${DEBIAN_VERSION} AS build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /src
COPY . .
# The revision --version and llm_stream_exporter_build_info report (the build
# context has no .git).
ARG REVISION=unknown
# Tests are built and run by CI, not in the image: only the exporter target,
# on every core. No -g: the binary is stripped below, and GCC's code does not
# depend on -g, so this is CI's RelWithDebInfo code without the debug info.
RUN bash scripts/setup.sh build \
 && BUILD_TARGET=llm_stream_exporter bash scripts/build.sh -DLSE_BUILD_TESTS=OFF \
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG" "-DLSE_REVISION=${REVISION}" \
 && rm -rf /var/lib/apt/lists/*
# Stage the binary, the default prompt set, and the list of Debian packages that
# own the shared libraries the binary links (installed in the run stage).
RUN install -D -m 0755 build/exporter/llm_stream_exporter /out/usr/local/bin/llm_stream_exporter \
 && strip --strip-unneeded /out/usr/local/bin/llm_stream_exporter \
 && install -d -m 0755 /out/etc/llm-stream-exporter/prompts \
 && if [ -d config/prompts ]; then cp config/prompts/*.txt /out/etc/llm-stream-exporter/prompts/; fi \
 && ldd build/exporter/llm_stream_exporter | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u \
    | while read -r lib; do \
        real="$(readlink -f "$lib")"; pkg=""; \
        for p in "$lib" "$real" "${lib#/usr}" "/usr${lib}" "${real#/usr}"; do \
          if out="$(dpkg -S "$p" 2>/dev/null)"; then pkg="${out%%:*}"; break; fi; \
        done; \
        if [ -z "$pkg" ]; then echo "no Debian package owns $lib" >&2; exit 1; fi; \
        echo "$pkg"; \
      done | sort -u > /out/runtime-packages \
 && test -s /out/runtime-packages \
 && cat /out/runtime-packages

FROM debian:${DEBIAN_VERSION}-slim
COPY --from=build /out/runtime-packages /tmp/runtime-packages
RUN apt-get update \
 && xargs --arg-file=/tmp/runtime-packages \
      apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages
COPY --from=build /out/usr/local/bin/llm_stream_exporter /usr/local/bin/llm_stream_exporter
COPY --from=build /out/etc/llm-stream-exporter/ /etc/llm-stream-exporter/
COPY LICENSE /usr/share/doc/llm-stream-exporter/copyright
# 65532 = the "nonroot" user of distroless images; no passwd entry needed.
USER 65532:65532
WORKDIR /tmp
EXPOSE 9687
ENTRYPOINT ["/usr/local/bin/llm_stream_exporter"]
CMD ["serve", "--config", "/etc/llm-stream-exporter/config.yaml"]
# OCI annotations (https://github.com/opencontainers/image-spec/blob/main/annotations.md),
# last so that a new revision changes no layer above. scripts/image.sh passes
# VERSION (CMakeLists.txt's project VERSION), REVISION and CREATED.
ARG DEBIAN_VERSION
ARG VERSION=unknown
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="llm-stream-exporter" \
      org.opencontainers.image.description="Prometheus exporter timing streamed LLM answers: time to first token, inter-chunk gaps, stalls" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="https://github.com/llm-stream-exporter/llm-stream-exporter" \
      org.opencontainers.image.url="https://github.com/llm-stream-exporter/llm-stream-exporter" \
      org.opencontainers.image.documentation="https://github.com/llm-stream-exporter/llm-stream-exporter/blob/main/docs/deploy.md" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="docker.io/library/debian:${DEBIAN_VERSION}-slim"
