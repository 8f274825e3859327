/**
 * Reading the event log in tests (docs/api.md#events-and-webhooks): the Event
 * body, `eventsAfter` (every event after a cursor, following `Link:
 * rel="next"`), `endOfLog`, `isAbout` (is an event about resources a test
 * owns? — the Worker suite shares one database), and `eventChecks`, whose
 * `expectEvents` runs a write and asserts exactly the events it emitted.
 */
import { expect } from "vitest";
import type { ApiClient, ApiResponse } from "./client";
import type { PetBody } from "../scenarios/pets.scenarios";

export interface EventBody {
  id: number;
  type: string;
  occurredAt: string;
  data: Record<string, unknown>;
}

/** Events after `after` up to the current end of the log (follows `Link: rel="next"`, 100 per page). */
export async function eventsAfter(api: ApiClient, key: string, after: number): Promise<EventBody[]> {
  const out: EventBody[] = [];
  let path: string | undefined = `/events?after=${after}&limit=100`;
  while (path) {
    const res: ApiResponse<EventBody[]> = await api.get<EventBody[]>(path, { key });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    out.push(...res.body);
    const link = res.headers.get("link");
    path = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1] : undefined;
  }
  return out;
}

const lastSeen = new WeakMap<ApiClient, number>();

/** The id of the newest event right now (0 when the log is empty). */
export async function endOfLog(api: ApiClient, key: string): Promise<number> {
  const from = lastSeen.get(api) ?? 0;
  const events = await eventsAfter(api, key, from);
  const end = events.length ? events[events.length - 1]!.id : from;
  lastSeen.set(api, end);
  return end;
}

/** Resources a test owns: events about anything else are ignored. */
export interface Owned {
  pets?: number[];
  categories?: number[];
  orders?: number[];
  /** Names used in refused creations. */
  names?: string[];
}

/** Whether an event is about one of `owned`'s resources. */
export function isAbout(event: EventBody, owned: Owned): boolean {
  const d = event.data as { id?: number; petId?: number; name?: string };
  const byName = d.name !== undefined && (owned.names ?? []).includes(d.name);
  switch (event.type.split(".")[0]) {
    case "pet":
      return (owned.pets ?? []).includes(d.id!) || byName;
    case "category":
      return (owned.categories ?? []).includes(d.id!) || byName;
    case "inventory":
      return (owned.pets ?? []).includes(d.petId!);
    case "order":
      return (owned.orders ?? []).includes(d.id!) || (owned.pets ?? []).includes(d.petId!);
    default:
      return true;
  }
}

/** `[type, data]` pairs, sorted by type (the order of events within one batch is not part of the contract). */
function pairs(events: { type: string; data: unknown }[]): [string, unknown][] {
  return events.map((e) => [e.type, e.data] as [string, unknown]).sort((a, b) => a[0].localeCompare(b[0]));
}

/** `expectEvents` and the reads its expectations use, bound to the client and staff key `client()` returns once set up. */
export function eventChecks(client: () => { api: ApiClient; key: string }) {
  /** Run `write`, then assert that the events about `owned()` since are exactly `expected()` (compared as sets). */
  async function expectEvents<T>(
    write: () => Promise<T>,
    owned: (result: T) => Owned,
    expected: (result: T) => Promise<{ type: string; data: unknown }[]> | { type: string; data: unknown }[],
  ): Promise<EventBody[]> {
    const { api, key } = client();
    const mark = await endOfLog(api, key);
    const result = await write();
    const events = (await eventsAfter(api, key, mark)).filter((e) => isAbout(e, owned(result)));
    expect(pairs(events)).toEqual(pairs(await expected(result)));
    for (const event of events) {
      expect(event.id).toBeGreaterThan(mark);
      expect(new Date(event.occurredAt).toISOString()).toBe(event.occurredAt);
    }
    return events;
  }

  /** The pet as GET /pets?id= shows it. */
  async function getPet(petId: number): Promise<PetBody> {
    const res = await client().api.get<PetBody[]>(`/pets?id=${petId}`);
    expect(res.status).toBe(200);
    return res.body[0]!;
  }

  /** The pet's inventory entry as GET /store/inventory/{petId} shows it. */
  async function getInventory(petId: number): Promise<unknown> {
    const res = await client().api.get(`/store/inventory/${petId}`);
    expect(res.status).toBe(200);
    return res.body;
  }

  return { expectEvents, getPet, getInventory };
}
