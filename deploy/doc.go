// Package deploy holds no code: its tests check the deployment files beside
// it, which users copy as they are.
//
//   - kubernetes/: every manifest decodes strictly into its Kubernetes API
//     type (unknown fields refused), the ConfigMap's job passes validate, and
//     the manifests agree with the job and with each other (ports, probes,
//     volumes, secrets, selectors). `kubectl apply -f kubernetes/` applies
//     no Secret and no placeholder: the Secret is an example kubectl skips
//     (secret.yaml.example), created by the command docs/operations.md
//     gives, with every key the StatefulSet reads. The dead letters go to a
//     Kafka topic, not to a file on each pod.
//   - systemd/: the unit has the keys a clean stop and a restart need.
//   - grafana/: every panel's query parses and returns data from a real
//     Prometheus scraping a running job.
package deploy
