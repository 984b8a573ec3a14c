"""What stands between a command the model sends and the machine.

Asking (by parse, to decide what needs approval):

    approval.py        the approval policy: allow lists, ask, refuse (``terminal.mode``)
    command_policy.py  which commands are risky, judged on their parse (allow by parse)
    git_risk.py        which git commands lose work
    read_only.py       which commands only read: the rule where there is no sandbox
    command_paths.py   which files a command writes or reads, for protected paths
    shell_parse.py     a command line read into simple commands (bashlex), wrappers

Confining (the kernel's boundary, whatever a parser reads):

    view.py            the one view of the file system: writable, read-only, hidden
    sandbox.py         bubblewrap mounts of that view, a private /tmp, no capabilities
    protected.py       what the file tools may read and write, looked up in the view
    limits.py          rlimits on a command's process tree, and killing all of it
    environment.py     the environment a command runs in, without hermes's secrets
    launch.py          a command's start: sandbox prefix, environment and limits
"""
