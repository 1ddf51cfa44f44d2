"""The prompt protocol: how a problem becomes a prompt (:mod:`.prompting`), how an answer becomes a program
(:mod:`.extraction`), and the named protocols of the peers (:mod:`.presets`)."""
