"""Background processes: started by ``terminal``, followed with the ``process`` tool.

background.py  their lifecycle: start, watch, judge, kill; drain_events
watch.py       watch patterns: matching output lines, 0.19's rate limits
checkpoint.py  adopting the live processes of Hermes Agent 0.19's processes.json
store.py       their records under ``$HERMES_HOME/processes``
events.py      completion events, exactly once: EventBus, the spool
tool.py        the ``process`` tool (list, poll, log, wait, kill)
"""
