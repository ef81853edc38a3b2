# syntax=docker/dockerfile:1.7
#
# The ragops image: one binary (`ragops manager`, `ragops embed`, `ragops evaluate`, ...) and
# the ONNX Runtime shared library with the CUDA execution provider, and Tesseract for OCR.
#
#   docker build --build-arg VERSION=$(git describe --tags --always) -t ghcr.io/ragops/ragops:<tag> .
#
# Base images are pinned by exact version tag (digests could not be verified from the build
# host; add @sha256:<digest> after each tag where your registry mirror lets you check it).
# test/packaging checks this file without Docker: every base pinned, the ONNX Runtime version
# and checksum equal hack/provision-onnxruntime.sh's, cgo on (onnxruntime_go calls dlopen
# through cgo, so the binary links glibc and the runtime stage is glibc-based), and the
# binary loads the library from the path RAGOPS_ONNXRUNTIME_LIB names below, which is also
# embedder/ort.DefaultLibrary (used when the variable is unset). The CUDA provider libraries
# sit beside it: ONNX Runtime loads them from its own folder.

ARG ORT_VERSION=1.31.1

# ---- build: the ragops binary (cgo on: github.com/yalue/onnxruntime_go uses cgo + dlopen)
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=1 GOOS=linux GOARCH=amd64 go build -trimpath \
      -ldflags "-s -w -X github.com/ragops/ragops/internal/version.Version=${VERSION}" \
      -o /out/ragops .

# ---- onnxruntime: libonnxruntime and its CUDA execution provider from the PyPI
# onnxruntime-gpu wheel (built for CUDA 13 and cuDNN 9), checked against a pinned SHA-256
# (the same version and checksum as hack/provision-onnxruntime.sh cuda).
FROM python:3.12.12-slim-bookworm AS onnxruntime
ARG ORT_VERSION
ARG ORT_WHEEL=onnxruntime_gpu-1.31.1-cp312-cp312-manylinux_2_28_x86_64.whl
ARG ORT_WHEEL_SHA256=05d548956197b9d01f59b625de740e0d6be3593f874e241a12dc0362650ecdf7
RUN pip download --no-cache-dir --quiet --no-deps --only-binary=:all: --python-version 3.12 \
      --implementation cp --platform manylinux_2_28_x86_64 \
      -d /wheel "onnxruntime-gpu==${ORT_VERSION}" \
 && echo "${ORT_WHEEL_SHA256}  /wheel/${ORT_WHEEL}" | sha256sum -c - \
 && python -m zipfile -e "/wheel/${ORT_WHEEL}" /x \
 && mkdir -p /out \
 && cp "/x/onnxruntime/capi/libonnxruntime.so.${ORT_VERSION}" /out/libonnxruntime.so \
 && cp /x/onnxruntime/capi/libonnxruntime_providers_shared.so \
       /x/onnxruntime/capi/libonnxruntime_providers_cuda.so /out/

# ---- runtime: glibc (Ubuntu 24.04) with the CUDA 13 runtime and cuDNN 9 that the CUDA
# execution provider links against. Runs as 65532 with a read-only root file system; the
# only writes go to /tmp (an emptyDir in the pods).
FROM nvidia/cuda:13.0.1-cudnn-runtime-ubuntu24.04
# Tesseract 5 with the Dutch and English models for the OCR stage (reader/ocr): the same
# packages hack/prepare.d/tesseract.sh installs for the tests.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      tesseract-ocr tesseract-ocr-nld tesseract-ocr-eng \
 && rm -rf /var/lib/apt/lists/*
COPY --from=onnxruntime /out/ /usr/local/lib/onnxruntime/
COPY --from=build /out/ragops /usr/local/bin/ragops
ENV RAGOPS_ONNXRUNTIME_LIB=/usr/local/lib/onnxruntime/libonnxruntime.so \
    RAGOPS_TESSERACT=/usr/bin/tesseract \
    TMPDIR=/tmp \
    HOME=/tmp
USER 65532:65532
WORKDIR /tmp
ENTRYPOINT ["/usr/local/bin/ragops"]
CMD ["manager"]
