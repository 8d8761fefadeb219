"""The Jinja reference of tec's chat templates (tokenizer/chat_test.go).

    python3 chat.py IN.json OUT.json

IN.json is {"today": "YYYY-MM-DD", "cases": [{"template", "bos_token",
"messages", "add_generation_prompt"}, ...]}; OUT.json gets the rendered
prompts. The templates are rendered as Hugging Face's apply_chat_template
renders them: Jinja's sandbox with trim_blocks and lstrip_blocks, the
loop-control extension, raise_exception, and strftime_now, here at the
fixed date "today".

Needs Debian's python3-jinja2.
"""

import datetime
import json
import sys

import jinja2
import jinja2.ext
import jinja2.sandbox


def render(cases, today):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def strftime_now(fmt):
        return today.strftime(fmt)

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols]
    )
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    out = []
    for c in cases:
        template = env.from_string(c["template"])
        out.append(
            template.render(
                messages=c["messages"],
                add_generation_prompt=c["add_generation_prompt"],
                bos_token=c["bos_token"],
            )
        )
    return out


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: chat.py IN.json OUT.json")
    with open(sys.argv[1], encoding="utf-8") as f:
        inp = json.load(f)
    today = datetime.date.fromisoformat(inp["today"])
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(render(inp["cases"], today), f)
