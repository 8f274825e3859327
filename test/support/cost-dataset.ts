/**
 * The generated dataset of the cost test and `npm run bench -- --rows` (docs/database-cost.md): SQL
 * statements that fill the first schema (0000_init) at a scale, every time relative to a given instant.
 */

/** Sizes of the generated dataset at a scale factor (docs/database-cost.md: at least these at scale 1). */
export function datasetSize(scale: number) {
  const pets = Math.round(10_000 * scale);
  return {
    categories: 20,
    pets: pets - (pets % 50),
    orders: Math.round(20_000 * scale),
    events: Math.round(50_000 * scale),
    customers: Math.round(200 * scale),
    revokedKeys: Math.round(100 * scale),
    idempotencyKeys: Math.round(2_000 * scale),
    /** Deliveries of subscription 1 (the long log), of 2, of each of 3–14 (all `["*"]`), and the window of 15–20 (a few types). */
    windows: [17_500, 4_000, 7_700, 17_000].map((n) => Math.round(n * scale)),
  };
}

/** Event types of subscriptions 15–20: none of them is written by placing an order. */
const NARROW_INTERESTS = [
  ["pet.created", "pet.deleted"],
  ["category.created", "category.updated", "category.deleted"],
  ["order.cancelled"],
  ["pet.deleted"],
  ["category.updated"],
  ["pet.created"],
];

/** A deterministic pseudo-random integer in [0, 65536) of the SQL integer expression `x` (the high bits of a multiplicative hash). */
const hash = (x: string, salt: number) => `((((${x}) + ${salt * 40503}) * 2654435761 % 4294967296) / 65536)`;
/** `n` rows 1..n of column `i`. */
const seq = (n: number) => `WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ${n})`;
/** RFC 3339 text of the Julian day expression `jd`, as the app stores times. */
const ts = (jd: string) => `strftime('%Y-%m-%dT%H:%M:%fZ', ${jd})`;

/**
 * The SQL statements that fill a migrated database at `scale` (see `datasetSize`),
 * every time relative to `now`: events spread over 60 days with a growing rate
 * (age = 60 d × (1 − i/n)²), so retention has ~29 % of them to delete; most pets
 * sold; 99.5 % of orders complete; deliveries for the last days of events, mostly
 * delivered, a few hundred older than the 7 days they are kept.
 */
export function datasetStatements(scale: number, now: Date, hookUrl: (webhookId: number) => string): string[] {
  const n = datasetSize(scale);
  const nowJd = `julianday('${now.toISOString()}')`;
  /** The time `days` × (1 − i/count)² before now. */
  const aged = (i: string, count: number, days: number) => ts(`${nowJd} - ${days}.0 * (1.0 - ${i} * 1.0 / ${count}) * (1.0 - ${i} * 1.0 / ${count})`);
  const customer = (x: string, salt: number) => `2 + ${hash(x, salt)} % ${n.customers}`;
  const blocks = n.pets / 50;
  const eventType = `CASE WHEN t < 70 THEN 'order.placed' WHEN t < 130 THEN 'inventory.updated' WHEN t < 170 THEN 'order.fulfilled' WHEN t < 186 THEN 'pet.updated'
    WHEN t < 196 THEN 'pet.created' WHEN t < 198 THEN 'order.cancelled' WHEN t < 199 THEN 'category.updated' ELSE 'pet.deleted' END`;
  const pet = (x: string) => `json_object('id', ${x}, 'name', 'Pet ' || ${x}, 'categoryId', 1 + ${x} % 20, 'status', 'sold')`;
  const webhooks = Array.from({ length: 20 }, (_, k) => {
    const interest = k < 14 ? ["*"] : NARROW_INTERESTS[k - 14]!;
    return `(${k + 1}, '${hookUrl(k + 1)}', '${JSON.stringify(interest)}', 'whsec_${Buffer.alloc(32, k + 1).toString("base64")}', 'active', ${ts(`${nowJd} - 60`)}, ${n.events})`;
  });
  const [longLog, doomed, wide, narrow] = n.windows as [number, number, number, number];
  const windows = Array.from({ length: 20 }, (_, k) => `(${k + 1}, ${k === 0 ? longLog : k === 1 ? doomed : k < 14 ? wide : narrow})`);
  return [
    `${seq(n.categories)} INSERT INTO categories (id, name, name_key, description, version) SELECT i, 'Category ' || i, 'category ' || i, 'Pets of kind ' || i, 1 FROM seq`,
    `${seq(n.pets)} INSERT INTO pets (id, name, category_id, status, version)
      SELECT i, 'Pet ' || i, 1 + ${hash("i", 1)} % 20, CASE WHEN i % 50 = 0 THEN 'pending' WHEN i % 50 < 5 THEN 'available' ELSE 'sold' END, 1 FROM seq`,
    `INSERT INTO inventory (pet_id, quantity, version) SELECT id, CASE status WHEN 'available' THEN 1 + id % 5 ELSE 0 END, 1 FROM pets`,
    `INSERT INTO accounts (id, name, email, email_key, role, created_at) VALUES (1, 'staff', 'staff@staff.petstore.invalid', 'staff@staff.petstore.invalid', 'staff', ${ts(`${nowJd} - 90`)})`,
    `${seq(n.customers)} INSERT INTO accounts (id, name, email, email_key, role, created_at)
      SELECT i + 1, 'Customer ' || i, 'customer' || i || '@example.com', 'customer' || i || '@example.com', 'customer', ${aged("i", n.customers + 1, 90)} FROM seq`,
    `${seq(n.customers + n.revokedKeys)} INSERT INTO api_keys (account_id, name, prefix, secret_hash, created_at, last_used_at, revoked_at)
      SELECT 2 + i % ${n.customers}, 'generated', 'psk_gen' || (i % 1000), printf('%064d', i), ${ts(`${nowJd} - 80`)},
        CASE WHEN i <= ${n.customers} THEN ${ts(`${nowJd} - 1`)} END, CASE WHEN i > ${n.customers} THEN ${ts(`${nowJd} - 31 - i % 40`)} END FROM seq`,
    `${seq(n.orders)} INSERT INTO orders (id, pet_id, account_id, quantity, ship_date, complete, created_at, version, placement_token)
      SELECT i, CASE WHEN i % 200 = 0 THEN 50 * (1 + (i / 200) % ${blocks}) ELSE 50 * (${hash("i", 2)} % ${blocks}) + 5 + ${hash("i", 3)} % 45 END,
        ${customer("i", 4)}, 1 + i % 3, CASE WHEN i % 200 <> 0 THEN ${aged("i", n.orders + 1, 60)} END, i % 200 <> 0, ${aged("i", n.orders + 1, 60)}, 1, 'generated-' || i FROM seq`,
    `${seq(n.events)} INSERT INTO events (id, type, occurred_at, data)
      SELECT i, type, ${aged("i", n.events, 60)}, CASE
        WHEN type LIKE 'order.%' THEN json_object('id', 1 + i % ${n.orders}, 'petId', 5 + i % ${n.pets - 5}, 'quantity', 1, 'complete', json(CASE type WHEN 'order.fulfilled' THEN 'true' ELSE 'false' END))
        WHEN type = 'inventory.updated' THEN json_object('petId', 5 + i % ${n.pets - 5}, 'quantity', 0, 'status', 'sold')
        WHEN type LIKE 'category.%' THEN json_object('id', 1 + i % 20, 'name', 'Category ' || (1 + i % 20), 'description', 'Pets')
        ELSE ${pet(`(5 + i % ${n.pets - 5})`)} END
      FROM (SELECT i, ${eventType} AS type FROM (SELECT i, ${hash("i", 5)} % 200 AS t FROM seq))`,
    `INSERT INTO webhooks (id, url, events, secret, status, created_at, last_event_id) VALUES ${webhooks.join(", ")}`,
    `WITH win(id, n) AS (VALUES ${windows.join(", ")})
      INSERT INTO webhook_deliveries (webhook_id, event_id, status, attempts, next_attempt_at, last_status_code, last_error, last_attempt_at, delivered_at)
      SELECT w.id, e.id, CASE WHEN (e.id + w.id) % 100 = 0 THEN 'failed' ELSE 'delivered' END, CASE WHEN (e.id + w.id) % 100 = 0 THEN 8 ELSE 1 END,
        ${ts("julianday(e.occurred_at) + 2.0 / 86400")}, CASE WHEN (e.id + w.id) % 100 = 0 THEN 500 ELSE 204 END,
        CASE WHEN (e.id + w.id) % 100 = 0 THEN 'http_status' END, ${ts("julianday(e.occurred_at) + 2.0 / 86400")},
        CASE WHEN (e.id + w.id) % 100 <> 0 THEN ${ts("julianday(e.occurred_at) + 2.0 / 86400")} END
      FROM webhooks w JOIN win ON win.id = w.id JOIN events e ON e.id > ${n.events} - win.n
      WHERE w.events = '["*"]' OR e.type IN (SELECT value FROM json_each(w.events))
      ORDER BY e.id, w.id`,
    `${seq(n.idempotencyKeys)} INSERT INTO idempotency_keys (account_id, key, method, path, request_hash, response_status, response_body, response_headers, created_at)
      SELECT ${customer("i", 6)}, 'generated-' || i, 'POST', '/store/orders', printf('%064d', i), 201, json_object('id', i), '{}',
        ${ts(`${nowJd} - 2.0 * (${n.idempotencyKeys} - i) / ${n.idempotencyKeys}`)} FROM seq`,
  ];
}
