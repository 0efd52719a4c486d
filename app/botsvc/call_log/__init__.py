"""The bot's call log, the service side (docs/call-log.md): ``capture``
takes the dispatcher's description of a call (one ``CallFacts``, ``facts``, handed at
``call_started`` and ``call_ended``) and makes its record (``record``);
``writer`` writes the records, best effort, never in the caller's way. How
records are stored and read is the domain's (botsvc.domain.call_records,
botsvc.domain.call_log)."""
