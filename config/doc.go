// Package config is the YAML job file of the signalbox CLI: it parses a job,
// validates every field, and builds the Kafka source configuration, the
// sinks and the pipeline options from it. docs/config.md documents every
// field and its default.
//
// Lifecycle: Parse (or Load) → Validate → Build → Plan.Pipeline.
//
// Invariants:
//
//  1. Unknown keys are errors. Parse reports each one with its YAML path and
//     line; it never silently ignores a misspelt setting.
//  2. Validate reports every bad field at once, each as a FieldError naming
//     the field by its YAML path (e.g. "inputs[2].time_field") and, when
//     known, its line. It never stops at the first problem.
//  3. A Job that Validate accepts builds: Build fails only for what depends
//     on the environment (a missing secret, an unreadable file).
//  4. Secrets never enter the Job: sasl.password_env names an environment
//     variable, read only by Build, and no error or log repeats its value.
//  5. Parse, Validate and Build never panic, whatever the input bytes
//     (FuzzParse).
//  6. Zero values mean the documented default; defaults are those of the
//     library (package signalbox and sources/kafka), never a second copy
//     that could drift (TestDocumentedDefaultsMatchCode holds
//     docs/config.md to them).
//  7. The rules of the inputs, the late policy, the run mode and the Kafka
//     connection are the library's (signalbox.Input.Validate,
//     LatePolicy.Validate, Until.Validate, kafka.Config.Validate,
//     kafka.CheckBroker): Validate maps their field errors onto YAML paths
//     and lines. Only what the job file alone has (durations and sizes as
//     text, *_env names, which sinks may go together, the sinks' fields) is
//     checked here.
//  8. Parse walks one yaml.Node tree (decode.go); it never reads the text
//     of yaml.v3's error messages, and it refuses a file beyond MaxJobSize.
package config
