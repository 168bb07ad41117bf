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
//  6. A field left out takes the documented default; one that is set is
//     taken as written (0 is "off" where there is one, else refused, as for
//     the library's options, signalbox.Option). Defaults are those of the
//     library (package signalbox and sources/kafka), never a second copy
//     that could drift (TestDocumentedDefaultsMatchCode holds
//     docs/config.md to them).
//  7. The rules of the pipeline (its inputs and their duplicates, the late
//     policy and its dead-letter sink, the run mode, how many sinks and how
//     many exactly-once ones, the range of every size and interval) are the
//     library's, checked by signalbox.ValidateOptions on the options the job
//     makes (with stand-ins for its sinks, each describing itself as the
//     sink it stands for would: its package's Config.Info, never a second
//     opinion here); those of the Kafka connection and
//     of each sink are kafka.Config.Validate, kafka.CheckBroker, the sinks'
//     Validate and durable.StoreOptions.Validate. Validate maps their field
//     errors onto YAML paths and lines, so that validate refuses what run's
//     path (Build, New, Open) would (TestValidateAgreesWithRun,
//     cmd/signalbox's TestValidateAgreesWithRunBinary). A field left out
//     gives no option (the library's default); a field set gives its
//     option as written, for the library to judge. Only what the job file
//     alone has is checked here: durations and sizes as text, 0 for "off"
//     where the Kafka source's configuration takes a negative, state.memory
//     above 0, *_env names, sink fields that belong to another type, files
//     written twice, and sink settings that involve the job's group. A
//     sink's count set to 0 is judged as written by the sink's Validate
//     (validator.asWritten); its Config takes 0 for the default, so run's
//     path refuses it only through Validate, which Build runs first.
//  8. Parse walks one yaml.Node tree (decode.go); it never reads the text
//     of yaml.v3's error messages, and it refuses a file beyond MaxJobSize.
//  9. Parse measures the document with every alias and merge key expanded,
//     on the node graph (linear in the file), before decoding it, and
//     refuses one beyond MaxNodes or MaxDepth, or with an alias cycle,
//     naming the alias's line: the decoder then visits at most MaxNodes
//     nodes (FuzzParse), so no job file can cost more than that.
//  10. A key set twice in one mapping is an error naming both lines. Merge
//     keys follow YAML 1.1: a mapping's own keys override merged ones, an
//     earlier merged mapping's keys a later one's, each key taken whole.
//  11. Each sink type's settings are one struct (sink_<type>.go) whose yaml
//     tags are its keys and whose methods validate and build it: a sink's
//     mapping is decoded by the generic walker into the union of every
//     type's keys (sinkUnion), then its type takes its own keys; a key of
//     another type set to other than its zero value is refused by Validate
//     naming the type and its keys (TestSinkKeysAreDocumented holds each
//     struct to its table in docs/config.md).
//  12. Every expression (process, inputs[i].process, sinks[i].where) is
//     compiled by Validate with package process, each error at its YAML
//     path and line with the column inside the expression; dead_letter
//     takes no where. Build compiles them again and fails rather than build
//     a sink without its where (process.go).
package config
