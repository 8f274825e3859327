/**
 * Checks that a response matches what the served OpenAPI document says for its
 * operation and status: the status is documented and the JSON body validates
 * against the documented schema (Ajv over the dereferenced 3.0.3 schemas).
 */
import SwaggerParser from "@apidevtools/swagger-parser";
import Ajv, { type ValidateFunction } from "ajv";
import addFormats from "ajv-formats";

type Operation = { responses: Record<string, { content?: Record<string, { schema?: object }> }> };
type Document = { paths: Record<string, Record<string, Operation>> };

export interface ResponseCheck {
  method: string;
  path: string;
  status: number;
  body: unknown;
}

export class OpenApiValidator {
  private readonly ajv = new Ajv({ strict: false, allErrors: true });
  private readonly cache = new Map<string, ValidateFunction>();
  private readonly templates: { method: string; template: string; regex: RegExp }[] = [];

  private constructor(private readonly document: Document) {
    addFormats(this.ajv);
    this.ajv.addKeyword({ keyword: "example" });
    for (const [template, ops] of Object.entries(document.paths)) {
      const regex = new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/]+")}$`);
      for (const method of Object.keys(ops)) this.templates.push({ method, template, regex });
    }
  }

  /** Dereference `document` (a copy) and index its operations. */
  static async create(document: unknown): Promise<OpenApiValidator> {
    const dereferenced = (await SwaggerParser.dereference(structuredClone(document) as never)) as unknown as Document;
    return new OpenApiValidator(dereferenced);
  }

  /** The path template that a concrete path matches for `method`, if documented. */
  templateOf(method: string, path: string): string | undefined {
    const bare = path.split("?")[0]!;
    return this.templates.find((t) => t.method === method.toLowerCase() && t.regex.test(bare))?.template;
  }

  /** Problems with a response (empty when it matches the document). */
  check({ method, path, status, body }: ResponseCheck): string[] {
    const template = this.templateOf(method, path);
    if (!template) {
      // Undocumented routes (unknown paths, 405s) must still answer with the Error object.
      return status >= 400 ? this.validateError(body) : [`${method} ${path}: not in the document`];
    }
    const operation = this.document.paths[template]![method.toLowerCase()]!;
    const response = operation.responses[String(status)];
    if (!response) return [`${method} ${template}: status ${status} is not documented`];
    const schema = response.content?.["application/json"]?.schema;
    if (!schema) return body === undefined || body === null || body === "" ? [] : typeof body === "string" ? [] : [];
    const key = `${method} ${template} ${status}`;
    let validate = this.cache.get(key);
    if (!validate) {
      validate = this.ajv.compile(schema);
      this.cache.set(key, validate);
    }
    if (validate(body)) return [];
    return (validate.errors ?? []).map((e) => `${key}: ${e.instancePath || "(body)"} ${e.message}`);
  }

  private validateError(body: unknown): string[] {
    const b = body as { code?: unknown; message?: unknown; status?: unknown } | null;
    if (b && typeof b.code === "string" && typeof b.message === "string" && typeof b.status === "number") return [];
    return [`not an Error object: ${JSON.stringify(body)}`];
  }
}
