#!/usr/bin/env bash
# tests/sh/test_export_pty.sh - :export at a terminal (a pty, through testlib.sh's pty_run) with a lesson open
# writes the session as the student saw it: the steps shown (heading, text, code and its tables), a wrong
# answer with its verdict, a tensor value as a table, a heat map drawn as text (no window) as a PNG; and
# :export lesson FILE the lesson alone. Skipped with a message when /usr/bin/python3 is absent.
. "$(dirname "$0")/testlib.sh"
need_python export_pty
out=$(unset DISPLAY WAYLAND_DISPLAY MHA_PLOT_TERM MHA_LANG; pty_run 40 80 "$repl" 2>&1 <<STEPS
expect > 
send :open 2\r
expect One query against three keys
send :goto 5\r
expect Scaled weights
send answer(1)\r
expect not yet
send t = mha.tensor{{1, 2}, {3, 4}}\r
send t\r
expect [float32 (2,2)]
send plot.heatmap(t, {title = "HEAT"})\r
expect scale
send :export $tmp/s.ipynb\r
expect wrote the session to
send :export lesson $tmp/l.ipynb\r
patience 60
expect wrote lesson 2 to
send \x04
STEPS
)
check() {   # check NAME PATTERN WHY
    if printf '%s' "$out" | grep -aqE "$2"; then pass "$1"; else fail "$1" "$3: $out"; fi
}
check export_pty_said_session "wrote the session to $tmp/s\\.ipynb" ":export did not say it wrote the session"
check export_pty_said_lesson "wrote lesson 2 to $tmp/l\\.ipynb" ":export lesson did not say it wrote the lesson"
check export_pty_heat_as_text 'scale: ' "the heat map was not drawn as text at the terminal"

# the notebooks, read back: one line per finding, then compared
found=$("$python" - "$tmp/s.ipynb" "$tmp/l.ipynb" <<'PY' 2>&1
import json, sys
session = json.load(open(sys.argv[1], encoding="utf-8"))
lesson = json.load(open(sys.argv[2], encoding="utf-8"))
text = lambda lines: "".join(lines)
cells = session["cells"]
markdown = [text(c["source"]).split("\n")[0] for c in cells if c["cell_type"] == "markdown"]
print("headings:", " | ".join(markdown))
for c in cells:
    if c["cell_type"] != "code":
        continue
    source = text(c["source"])
    kinds = []
    for o in c["outputs"]:
        if o["output_type"] == "stream":
            kinds.append("stream:" + text(o["text"]).strip().split("\n")[0][:60])
        else:
            kinds.append(o["output_type"] + ":" + ",".join(sorted(o["data"])))
    print("cell %s -> %s" % (source.split("\n")[0][:40], " ; ".join(kinds)))
print("lesson:", text(lesson["cells"][0]["source"]).split("\n")[0], lesson["metadata"]["kernelspec"]["name"])
PY
)
want() {   # want NAME LINE: a line of what the notebooks hold
    if printf '%s\n' "$found" | grep -qxF -- "$2"; then pass "$1"; else fail "$1" "no line '$2' in: $found"; fi
}
want export_pty_headings "headings: # mha-repl session | ## 02 Dot-product attention by hand | ### Step 1/5: One query against three keys | ### Step 5/5: Scaled weights for all queries"
want export_pty_step_tables "cell tokens = {\"I\", \"love\", \"tea\"} -> display_data:text/html,text/plain ; display_data:text/html,text/plain ; display_data:text/html,text/plain"
want export_pty_wrong_answer "cell answer(1) -> stream:not yet: your answer has 1 number(s); the expected one has 9"
want export_pty_value_table "cell t -> execute_result:text/html,text/plain"
want export_pty_heatmap_png "cell plot.heatmap(t, {title = \"HEAT\"}) -> display_data:image/png,text/plain"
want export_pty_lesson_alone "lesson: # 02 Dot-product attention by hand mha-repl"
waits=$(printf '%s' "$out" | grep -a '^pty_drive: ')
[ -z "$waits" ] && pass export_pty_answers || fail export_pty_answers "$waits"
[ "$fails" -eq 0 ]
