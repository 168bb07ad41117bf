# The signalbox image: a static binary on distroless, run as a non-root user.
#   docker build --build-arg VERSION=0.1.0 --build-arg COMMIT=$(git rev-parse HEAD) -t signalbox:0.1.0 .
# internal/release's image test reads the final stage's LABEL, USER,
# ENTRYPOINT and COPY lines and the -X flags below, builds the same image
# without a Docker daemon, and runs it.

FROM golang:1.26 AS build
ARG VERSION=devel
ARG COMMIT=unknown
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X github.com/signalbox/signalbox/internal/version.version=${VERSION} -X github.com/signalbox/signalbox/internal/version.commit=${COMMIT}" \
    -o /out/signalbox ./cmd/signalbox

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=devel
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="signalbox" \
      org.opencontainers.image.description="Event-time ordering stream processor for Kafka" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/signalbox/signalbox"
COPY --from=build /out/signalbox /usr/local/bin/signalbox
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/signalbox"]
CMD ["--help"]
