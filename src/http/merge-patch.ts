/** PATCH bodies as JSON Merge Patch (RFC 7396) documents of a resource's writable members (docs/api.md#patch-is-a-json-merge-patch). */
import { z } from "@hono/zod-openapi";

type Shape = Record<string, z.ZodType>;
/** A member's schema without its `.optional()`. */
type Unwrapped<S extends z.ZodType> = S extends z.ZodOptional<infer Inner extends z.ZodType> ? Inner : S;
/** The patch members of `S`: each optional, and nullable when its key is in `O`. */
type PatchShape<S extends Shape, O extends string> = { [K in keyof S]: z.ZodOptional<K extends O ? z.ZodNullable<Unwrapped<S[K]>> : Unwrapped<S[K]>> };

/** The names in `names` joined for prose: "a", "a and b", "a, b and c" (or `conjunction`). */
function prose(names: readonly string[], conjunction = "and"): string {
  return names.length <= 1 ? (names[0] ?? "") : `${names.slice(0, -1).join(", ")} ${conjunction} ${names.at(-1)}`;
}

/** Merge Patch schema `name` of `members` (a create shape) about `about`: all optional, those in `optional` also `null` (removed); no member is refused. */
export function mergePatchSchema<S extends Shape, O extends string>(name: string, members: S, optional: readonly O[], about: string) {
  const removable = new Set<string>(optional);
  const shape = Object.fromEntries(
    Object.entries(members).map(([key, member]) => {
      const inner = member instanceof z.ZodOptional ? (member.unwrap() as z.ZodType) : member;
      return [key, removable.has(key) ? inner.nullable().optional() : inner.optional()];
    }),
  ) as PatchShape<S, O>;
  const clearable = Object.keys(members).filter((key) => removable.has(key));
  const fixed = Object.keys(members).filter((key) => !removable.has(key));
  const nulls = [
    clearable.length > 0 ? `\`null\` removes ${prose(clearable)}` : "",
    fixed.length > 0 ? `${prose(fixed)} ${fixed.length === 1 ? "is" : "are"} required, so \`null\` is refused there` : "",
  ].filter((part) => part !== "");
  return z
    .strictObject(shape)
    .refine((patch) => Object.keys(patch).length > 0, `Give at least one of ${prose(Object.keys(members), "or")}.`)
    .openapi(name, {
      description: `A JSON Merge Patch (RFC 7396) of ${about}: members left out are kept, members given are set; ${nulls.join("; ")}. At least one member.`,
      minProperties: 1,
    });
}

/** A required PATCH body of `schema` (a `mergePatchSchema`) described by `what`, accepted as `application/merge-patch+json` and as `application/json`. */
export function mergePatchBody<T>(schema: T, what: string) {
  const description = `${what} A JSON Merge Patch (RFC 7396), as application/merge-patch+json or application/json.`;
  return { required: true, description, content: { "application/merge-patch+json": { schema }, "application/json": { schema } } };
}
