#!/usr/bin/env bash
# Report this machine's health: load, memory, full disks, busiest processes.
set -uo pipefail
cpus=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
read -r one five fifteen _ < /proc/loadavg
echo "## Load"
echo "1 min $one, 5 min $five, 15 min $fifteen on $cpus CPU(s)"
echo
echo "## Memory"
awk '/^(MemTotal|MemAvailable|SwapTotal|SwapFree):/ {printf "%s %.1f GiB\n", $1, $2/1048576}' /proc/meminfo
echo
echo "## File systems over 80% full"
df -P -x tmpfs -x devtmpfs 2>/dev/null | awk 'NR>1 {gsub("%","",$5); if ($5+0 >= 80) print $6" "$5"% used"}' | sort -u
echo "(end of list)"
echo
echo "## Busiest processes (CPU)"
ps -eo pid,pcpu,pmem,comm --sort=-pcpu | head -6
echo
echo "## Busiest processes (memory)"
ps -eo pid,pmem,rss,comm --sort=-pmem | head -6
