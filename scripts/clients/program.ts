// A merchant's integration written against the TypeScript client generated from openapi.json
// (openapi-typescript's types, openapi-fetch's calls), run by scripts/clients/run against a live
// `serve --demo`: a create with one valid and one invalid item, a list walked by cursor, a search,
// the feed waiting with wait_s, and a webhook delivery verified with the Standard Webhooks library.
// It is type-checked with --strict first: a misspelt field of an item does not compile.
// Usage: node program.js BASE_URL API_KEY
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import createClient from "openapi-fetch";
import { Webhook } from "standardwebhooks";
import type { components, paths } from "./schema.js";

type LocationItem = components["schemas"]["LocationItem"];
type Event = components["schemas"]["Event"];

const [base, apiKey] = process.argv.slice(2);
if (!base || !apiKey) throw new Error("usage: node program.js BASE_URL API_KEY");
const client = createClient<paths>({ baseUrl: base, headers: { Authorization: `Bearer ${apiKey}` } });

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(`not as documented: ${what}`);
  console.log(`ok: ${what}`);
}

const run = Date.now().toString(36);
const pickupPoint: LocationItem = {
  merchant_location_id: `ts-${run}`,
  location_types: ["PICKUP_POINT"],
  name: "TypeScript client's pickup point",
  address_tail: "101000, Russia, Moscow, Tverskaya street, 7",
  latitude: 55.7575,
  longitude: 37.6134,
  pickup_point_type: "PICKUP_POINT",
  payment_methods: ["CARD"],
  storage_period_days: 7,
  limits: { length: 60, width: 40, height: 40, weight: 15 },
  working_schedule: [{ day: "MONDAY", schedule: { time_start: "09:00", time_end: "21:00" } }],
  is_accepts_returns: true,
};
// Typed as an item, yet invalid by the service's rules: a latitude out of range.
const invalid: LocationItem = { ...pickupPoint, merchant_location_id: `ts-${run}-bad`, latitude: 91 };

// 1. A create of one valid and one invalid item: one result each, the error as typed fields.
{
  const { data, error, response } = await client.POST("/v1/location/create", {
    body: { locations: [pickupPoint, invalid] },
  });
  if (!data) throw new Error(`create: ${response.status} ${JSON.stringify(error)}`);
  const [stored, failed] = data.locations;
  check(stored?.status === "ACTIVE" && stored.location_id !== "" && stored.errors.length === 0, "the valid item is stored ACTIVE");
  check(
    failed?.status === "FAILED" && failed.location_id === "" &&
      failed.errors.some((e) => e.field === "locations[1].latitude" && e.code === "INVALID_LATITUDE"),
    "the invalid item is FAILED with INVALID_LATITUDE at locations[1].latitude",
  );
}

// 2. Every ACTIVE pickup point, walked page by page with the cursor: as many as the total said.
{
  let cursor: string | null | undefined = null;
  let seen = 0;
  let total: number | null | undefined;
  do {
    const body: components["schemas"]["LocationListRequest"] = {
      filter: { status: "ACTIVE", location_types: ["PICKUP_POINT"] },
      pagination: { limit: 40, cursor },
    };
    const { data, response } = await client.POST("/v1/location/list", { body });
    if (!data) throw new Error(`list: ${response.status}`);
    seen += data.locations.length;
    total = data.pagination.total;
    cursor = data.pagination.has_next ? data.pagination.next_cursor : null;
  } while (cursor);
  check(total !== undefined && total !== null && total > 40 && seen === total, `the list walked by cursor: ${seen} of ${total}`);
}

// 3. A search: the nearest point that takes a card, with its distance.
{
  const { data, response } = await client.POST("/v1/location/search", {
    body: { near: { latitude: 55.7575, longitude: 37.6134 }, radius_m: 3000, filter: { payment_method: "CARD" }, pagination: { limit: 3 } },
  });
  if (!data) throw new Error(`search: ${response.status}`);
  const distances = data.results.map((r) => r.distance_m);
  check(
    data.results.length === 3 && distances.every((d, i) => i === 0 || (distances[i - 1] ?? 0) <= d) &&
      data.results.every((r) => r.location.payment_methods?.includes("CARD") === true),
    `a search, nearest first: ${distances.join(", ")} m`,
  );
}

// 4. The feed: from its end, a wait of up to 10 s answered by the next change.
{
  const { data: start } = await client.POST("/v1/location/events", { body: { start: "latest", pagination: { limit: 1 } } });
  if (!start) throw new Error("events: no answer");
  const waiting = client.POST("/v1/location/events", { body: { pagination: { limit: 10, cursor: start.pagination.next_cursor }, wait_s: 10 } });
  const { data: archived } = await client.POST("/v1/location/archive", { body: { locations: [{ merchant_location_id: pickupPoint.merchant_location_id }] } });
  check(archived?.locations[0]?.status === "ARCHIVED", "the pickup point archived");
  const { data: next } = await waiting;
  const event: Event | undefined = next?.events[0];
  check(event?.type === "location.archived" && event.merchant_location_id === pickupPoint.merchant_location_id, `the feed woke with ${event?.type} #${event?.sequence}`);
}

// 5. A webhook: a receiver on loopback, registered, a change delivered and verified.
{
  let resolveDelivery: (event: Event) => void = () => {};
  const delivered = new Promise<Event>((resolve) => (resolveDelivery = resolve));
  let verify: Webhook | undefined;
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const headers = {
        "webhook-id": String(req.headers["webhook-id"]),
        "webhook-timestamp": String(req.headers["webhook-timestamp"]),
        "webhook-signature": String(req.headers["webhook-signature"]),
      };
      try {
        const event = verify?.verify(body, headers) as Event; // throws on a bad signature
        res.writeHead(204).end();
        if (event.merchant_location_id === pickupPoint.merchant_location_id) resolveDelivery(event);
      } catch {
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const { port } = receiver.address() as AddressInfo;
  const { data: hook, error } = await client.POST("/v1/webhook/create", {
    body: { url: `http://127.0.0.1:${port}/hooks/storefront`, types: ["location.restored"] },
  });
  if (!hook) throw new Error(`webhook create: ${JSON.stringify(error)}`);
  verify = new Webhook(hook.secret);
  await client.POST("/v1/location/restore", { body: { locations: [{ merchant_location_id: pickupPoint.merchant_location_id }] } });
  const event = await Promise.race([
    delivered,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error("no delivery within 20 s")), 20_000)),
  ]);
  check(event.type === "location.restored" && event.status === "ACTIVE", `a delivery verified by standardwebhooks: ${event.type} #${event.sequence}`);
  await client.POST("/v1/webhook/delete", { body: { webhook_id: hook.webhook.webhook_id } });
  receiver.close();
}
console.log("the TypeScript client: every step as documented");
