/** A constant JSON Pet of about `bytes` bytes, the baselines' answer (bench/baseline.ts, the floor Workers). */
export function constantPet(bytes: number): string {
  const base = { id: 1, name: "", categoryId: 1, status: "available" };
  return JSON.stringify({ ...base, name: "x".repeat(Math.max(1, bytes - JSON.stringify(base).length)) });
}
