/**
 * Header names the projector adds to retry and dead-letter records. A record keeps its original key,
 * value and headers; these say where it came from and why it is here.
 */
export const HEADER = {
  attempt: "agp-attempt",
  notBefore: "agp-not-before",
  firstSeen: "agp-first-seen",
  deferReason: "agp-defer-reason",
  upstreamMark: "agp-upstream-mark",
  sourceTopic: "agp-source-topic",
  sourcePartition: "agp-source-partition",
  sourceOffset: "agp-source-offset",
  sourceTimestamp: "agp-source-timestamp",
  errorClass: "agp-error-class",
  errorMessage: "agp-error-message",
  serviceVersion: "agp-service-version",
  /** On a dead-lettered record sent without its value because it would not fit: the value's size. */
  valueOmitted: "agp-value-omitted",
  /** Set by producers on a tombstone, which has no value to carry its tenant. */
  tenantId: "tenant_id",
  /** Set by producers on a tombstone: the registry version of the deletion. */
  registryVersion: "registry_version",
} as const;

export function headerString(headers: Readonly<Record<string, Buffer | undefined>>, name: string): string | undefined {
  const value = headers[name];
  return value === undefined ? undefined : value.toString("utf8");
}

export function headerNumber(headers: Readonly<Record<string, Buffer | undefined>>, name: string): number | undefined {
  const text = headerString(headers, name);
  if (text === undefined) return undefined;
  const value = Number(text);
  return Number.isFinite(value) ? value : undefined;
}
