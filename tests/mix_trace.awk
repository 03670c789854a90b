# mix_trace.awk: a serving trace of mixed lengths for the benchmarks and
# the replay check (awk -v n=REQUESTS -v span=DECODE_SPAN -f mix_trace.awk):
# Poisson arrivals at 16 a second, prompts log-uniform in [64, 16384]
# tokens, 16 to 16 + span - 1 decode tokens; drawn by the Lehmer generator
# of Park and Miller (multiplier 48271, modulus 2^31 - 1, exact in awk's
# doubles) from seed 12345, so every awk writes the same trace.
BEGIN {
    x = 12345; t = 0; print "arrival_s,prompt_tokens,decode_tokens"
    for (i = 0; i < n; i++) {
        x = (x * 48271) % 2147483647; t += -log(1 - x / 2147483647) / 16
        x = (x * 48271) % 2147483647; p = int(exp(log(64) + x / 2147483647 * log(256)))
        x = (x * 48271) % 2147483647; d = 16 + int(x / 2147483647 * span)
        printf "%.6f,%d,%d\n", t, p, d
    }
}
