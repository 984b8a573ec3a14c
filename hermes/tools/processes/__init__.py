"""Background processes: started by ``terminal``, followed with the ``process`` tool.

background.py  their lifecycle: start, watch, judge, kill; drain_events
store.py       their records under ``$HERMES_HOME/processes``
events.py      completion events, exactly once: EventBus, the spool
tool.py        the ``process`` tool (list, poll, log, wait, kill)
"""
