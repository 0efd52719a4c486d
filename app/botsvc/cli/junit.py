"""JUnit XML for ``botsvc run-transcript --junit-xml``: the form CI servers
read (GitHub's and GitLab's test reports, Jenkins): one testsuite, one
testcase per transcript file, the step line as a failure's message and
the whole failure as its text, what the bot printed in system-out."""
from __future__ import annotations

import xml.etree.ElementTree as ET


def write_junit(path: str, outcomes) -> None:
    failures = sum(1 for outcome in outcomes if outcome.failure)
    total = sum(outcome.seconds for outcome in outcomes)
    suites = ET.Element("testsuites", tests=str(len(outcomes)), failures=str(failures),
                        errors="0", time=f"{total:.3f}")
    suite = ET.SubElement(suites, "testsuite", name="botsvc run-transcript",
                          tests=str(len(outcomes)), failures=str(failures), errors="0",
                          skipped="0", time=f"{total:.3f}")
    for outcome in outcomes:
        case = ET.SubElement(suite, "testcase", classname="botsvc.transcript",
                             name=outcome.file, time=f"{outcome.seconds:.3f}")
        if outcome.failure:
            failure = ET.SubElement(case, "failure",
                                    message=outcome.failure.partition("\n")[0])
            failure.text = outcome.failure
        ET.SubElement(case, "system-out").text = _xml_text(outcome.output)
    ET.ElementTree(suites).write(path, encoding="utf-8", xml_declaration=True)


def _xml_text(text: str) -> str:
    """What a bot printed may hold characters XML 1.0 cannot carry (escape
    sequences, NUL): shown as U+FFFD."""
    return "".join(ch if ch in "\t\n\r" or ord(ch) >= 0x20 and ch not in "\ufffe\uffff"
                   else "\ufffd" for ch in text)
