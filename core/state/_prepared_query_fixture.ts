// A prepared query body for tests: Go zero values, overridable per field.
import type { PreparedQueryBody } from "../rpc/methods.ts";

export function queryBody(over: Partial<Omit<PreparedQueryBody, "service" | "template">> & { service?: Partial<PreparedQueryBody["service"]>; template?: Partial<PreparedQueryBody["template"]> } = {}): PreparedQueryBody {
  const { service, template, ...rest } = over;
  return {
    id: "",
    name: "",
    session: "",
    token: "",
    dns: { ttl: "" },
    ...rest,
    template: { type: "", regexp: "", removeEmptyTags: false, ...template },
    service: {
      service: "web",
      failover: { nearestN: 0, datacenters: [] },
      ignoreCheckIds: [],
      onlyPassing: false,
      near: "",
      tags: [],
      nodeMeta: {},
      serviceMeta: {},
      connect: false,
      ...service,
    },
  };
}
