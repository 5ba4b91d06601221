// Package bench holds basin's system benchmarks (make bench): each
// workload runs on basin and on a reference measured in the same run
// (PostgreSQL on the same machine, or the raw Kafka rate), and the
// report is the ratio of the two, since absolute numbers on a shared
// machine are noise. The workloads are Go tests behind the build tag
// bench, so that make test never runs them; BENCHMARKS.md describes them
// and holds a run.
package bench
