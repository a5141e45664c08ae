// Customers by id, read once per page load: the inbox and the conversation name a visitor by them.

import {get} from "./api.js";

const customers = new Map();

export function customer(id) {
  if (!customers.has(id)) customers.set(id, get(`/api/customers/${id}`).catch(() => null));
  return customers.get(id);
}

export function customerName(found, id) {
  return found?.nickname || found?.email || found?.userId ||
    (found?.unverifiedEmail && `${found.unverifiedEmail} (unverified)`) || `Visitor ${id.slice(-6)}`;
}
