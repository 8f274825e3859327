/**
 * The store's test helpers (docs/api.md#stock-and-ordering): the Order and
 * InventoryItem bodies, `Store` (place, fulfil, cancel, restock, read and list
 * through the API) and `expectError`; a store scenario's client, category,
 * staff key and two customers come from `openStore` (test/support/cast.ts).
 */
import { expect } from "vitest";
import type { ApiClient, ApiResponse } from "./client";
import { createPet, type PetBody, type PetStatus } from "../scenarios/pets.scenarios";

export interface OrderBody {
  id: number;
  petId: number;
  quantity: number;
  shipDate?: string;
  complete: boolean;
}

export interface InventoryBody {
  petId: number;
  quantity: number;
  status: PetStatus;
}

/** The store's client-side helpers, bound to one API client and staff key. */
export class Store {
  constructor(
    readonly api: ApiClient,
    readonly staffKey: string,
    readonly categoryId: number,
  ) {}

  /** A new pet (status as given, default available) with its creation-time stock. */
  async pet(status?: PetStatus): Promise<PetBody> {
    return createPet(this.api, this.staffKey, this.categoryId, status ? { status } : {});
  }

  /** A new available pet with `quantity` units in stock (> 0). */
  async stocked(quantity: number): Promise<PetBody> {
    const pet = await this.pet();
    if (quantity !== 1) await this.setStockOk(pet.id, quantity);
    return pet;
  }

  /** PUT /store/inventory/{petId} as staff. */
  setStock(petId: number, quantity: number, headers?: Record<string, string>): Promise<ApiResponse<InventoryBody>> {
    return this.api.put<InventoryBody>(`/store/inventory/${petId}`, { quantity }, { key: this.staffKey, headers });
  }

  async setStockOk(petId: number, quantity: number): Promise<InventoryBody> {
    const res = await this.setStock(petId, quantity);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  }

  /** POST /store/orders with `key`. */
  place(key: string, body: Record<string, unknown>, headers?: Record<string, string>): Promise<ApiResponse<OrderBody>> {
    return this.api.post<OrderBody>("/store/orders", body, { key, headers });
  }

  /** Place an order, asserting 201. */
  async order(key: string, petId: number, quantity = 1, extra: Record<string, unknown> = {}): Promise<OrderBody> {
    const res = await this.place(key, { petId, quantity, ...extra });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body;
  }

  /** PATCH /store/orders/{id} as staff. */
  update(orderId: number, body: Record<string, unknown>, options: { key?: string; headers?: Record<string, string> } = {}) {
    return this.api.patch<OrderBody>(`/store/orders/${orderId}`, body, { key: options.key ?? this.staffKey, headers: options.headers });
  }

  /** Fulfil as staff, asserting 200. */
  async fulfil(orderId: number, body: Record<string, unknown> = {}): Promise<OrderBody> {
    const res = await this.update(orderId, { complete: true, ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  }

  /** DELETE /store/orders/{id} with `key`. */
  cancel(key: string, orderId: number, headers?: Record<string, string>): Promise<ApiResponse> {
    return this.api.delete(`/store/orders/${orderId}`, { key, headers });
  }

  /** The pet's inventory entry (public read). */
  async inventory(petId: number): Promise<InventoryBody> {
    const res = await this.api.get<InventoryBody>(`/store/inventory/${petId}`);
    expect(res.status).toBe(200);
    return res.body;
  }

  /** The pet's status as GET /pets?id= shows it. */
  async petStatus(petId: number): Promise<PetStatus> {
    const res = await this.api.get<PetBody[]>(`/pets?id=${petId}`);
    expect(res.body).toHaveLength(1);
    return res.body[0]!.status;
  }

  /** Every order visible to `key` matching `query`, following `Link: rel="next"`. */
  async orders(key: string, query = "", limit = 100): Promise<OrderBody[]> {
    const all: OrderBody[] = [];
    let path: string | undefined = `/store/orders?limit=${limit}${query ? `&${query}` : ""}`;
    while (path) {
      const res: ApiResponse<OrderBody[]> = await this.api.get<OrderBody[]>(path, { key });
      expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(200);
      expect(res.body.length).toBeLessThanOrEqual(limit);
      all.push(...res.body);
      const link = res.headers.get("link");
      path = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1] : undefined;
    }
    return all;
  }

  /** Orders of the pet, as staff see them. */
  ordersOfPet(petId: number, extra = ""): Promise<OrderBody[]> {
    return this.orders(this.staffKey, `petId=${petId}${extra ? `&${extra}` : ""}`);
  }
}

/** Assert an Error response with `status` and `code`. */
export function expectError(res: ApiResponse, status: number, code: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body.code).toBe(code);
}
