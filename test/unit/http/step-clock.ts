// A clock of the test's own for the adaptive rules (src/http/adaptive-rate.ts): time moves only when the test says.
export function stepClock() {
  let now = 1_000_000;
  return {
    now: () => now,
    sleep: async () => undefined,
    advance(ms: number) {
      now += ms;
    },
  };
}
