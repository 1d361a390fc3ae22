# One second of waiting and nearly no CPU: what a run slot costs when the work is elsewhere.
sleep 1
printf '{"ok": true}'
