"""Background processes: started by ``terminal``, followed with the ``process`` tool.

background.py  their lifecycle: start, watch, judge, kill
store.py       their records under ``$HERMES_HOME/processes``
events.py      completion events, exactly once: EventBus, drain_events
tool.py        the ``process`` tool (list, poll, log, wait, kill)
"""
