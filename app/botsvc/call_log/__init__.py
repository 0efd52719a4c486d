"""The bot's call log, the service side (docs/call-log.md): ``capture``
takes what the dispatcher learnt of a call and its answer (one
``CallCapture``) and makes its record (``record``); ``writer`` writes the
records, best effort, never in the caller's way. How records are stored and
read is the domain's (botsvc.domain.call_log)."""
