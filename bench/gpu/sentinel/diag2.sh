sh bench/gpu/sentinel/outside.sh -o /tmp/v vectoradd 2>&1 | tail -30
echo "=== vectoradd E lines (path claim sample seen-rel enddev backdev), first 40 of case 0 and 20 of case 1"
grep "^E " /tmp/v/err-vectoradd | head -40
grep "^E " /tmp/v/err-vectoradd | tail -20
echo "=== histogram, 200 us left after done"
EXTRA_DEFS=-DKBG_HOSTILE_AFTER=200000 sh bench/gpu/sentinel/outside.sh -o /tmp/h histogram 2>&1 | tail -30
grep "^E " /tmp/h/err-histogram | sed -n '100,130p'
