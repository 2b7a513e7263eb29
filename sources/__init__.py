"""Where documents come from: files, directories, stdin and a cluster's lists become documents
with positions.

`loader` reads YAML and JSON as kubectl types them and keeps every node's line and column
(`yaml_positions`; `yaml_fast` for large plain files), `walk` decides which files of a
directory are read, `scalar_positions` maps a position inside an expression back to the file,
and `cluster` lists a live cluster's objects through `kube`. Every reader returns the same
`LoadedDocument` values, so the commands treat a cluster like a file. A package of its own
because reading is no command's business: the CLI builds its commands on it, and nothing here
knows about click, reports or exit codes. It imports `policies` and `kube` only.
"""
