"""One module per mistake label: ``LABEL``, ``DEFINITION`` (what counts as the mistake and
what makes it good, in words; docs/failure_taxonomy.md repeats it) and ``find(episode)``, which
yields each such mistake at its step (`context.Suspect`). The registry (`..registry`) lists
them in tie-break order."""
