# llm-stream-exporter container image (docs/deploy.md, "Container image").
#
# Build stage: Debian 12 (bookworm) with the same scripts CI runs:
# scripts/setup.sh installs the build dependencies from Debian's archive,
# scripts/build.sh configures CMake into build/ and builds
# build/exporter/llm_stream_exporter. The run stage is debian-slim with only the
# shared libraries the binary links (found with ldd + dpkg -S in the build stage),
# a numeric non-root user, and nothing it needs to write: a read-only root
# filesystem works.
#
#   docker build -t llm-stream-exporter .
#   docker run --read-only --tmpfs /tmp -p 9687:9687 \
#     -v "$PWD/config.yaml:/etc/llm-stream-exporter/config.yaml:ro" llm-stream-exporter
#
# tests/deploy/check_dockerfile.py checks this file (no Docker engine on CI).

# Debian 12.11 = bookworm, the release CI and the developers build on.
ARG DEBIAN_VERSION=12.11

FROM debian:${DEBIAN_VERSION} AS build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /src
COPY . .
# Tests are built and run by CI, not in the image.
RUN bash scripts/setup.sh build \
 && bash scripts/build.sh -DLSE_BUILD_TESTS=OFF \
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
LABEL org.opencontainers.image.title="llm-stream-exporter" \
      org.opencontainers.image.description="Prometheus exporter timing streamed LLM answers: time to first token, inter-chunk gaps, stalls" \
      org.opencontainers.image.base.name="debian:bookworm-slim"
COPY --from=build /out/runtime-packages /tmp/runtime-packages
RUN apt-get update \
 && xargs --arg-file=/tmp/runtime-packages \
      apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages
COPY --from=build /out/usr/local/bin/llm_stream_exporter /usr/local/bin/llm_stream_exporter
COPY --from=build /out/etc/llm-stream-exporter/ /etc/llm-stream-exporter/
# 65532 = the "nonroot" user of distroless images; no passwd entry needed.
USER 65532:65532
WORKDIR /tmp
EXPOSE 9687
ENTRYPOINT ["/usr/local/bin/llm_stream_exporter"]
CMD ["serve", "--config", "/etc/llm-stream-exporter/config.yaml"]
