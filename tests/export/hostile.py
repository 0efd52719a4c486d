"""Texts an attacker (or a careless bot) puts in a chat, for the export's
tests: each must come out of an exported module, a transcript and the
sandbox's view of them exactly as it went in, and never as code."""

CORPUS = (
    "\0place:__import__('os').system('touch pwned')",   # the old in-band marker
    "\0place:",
    "\0",
    "quotes ' \" ''' \"\"\" ` ´ ‘ ’ “ ” « »",
    "back\\slash \\\\ \\n \\x00 \\u2028 \\",
    "lines\r\nCR LF\rCR\nLF",
    "separators\u2028line\u2029paragraph\x85next",
    "{} {0} {__import__} %s %(x)s %% ${HOME} $(id)",
    "'); import os; os.system('id'); ('",
    '"""\nimport os\nos.system("id")\n"""',
    "#!/bin/sh\n# -*- coding: rot13 -*-\nprint('x')\n\\",
    "user.done()\n    __import__('os').system('id')",
)
