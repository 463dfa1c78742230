// formats checks string values against JSON Schema formats with the
// TypeScript SDK's own validator: the default AjvJsonSchemaValidator that
// Server.elicitInput applies to an accepted ElicitResult (ajv with
// ajv-formats in full mode), refusing what fails with -32602.
//
// Usage: node formats.mjs < cases.json
//   stdin   [{"format": "email", "value": "a@example.com"}, ...]
//   stdout  [true, false, ...], one verdict per case, in order
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const cases = JSON.parse(Buffer.concat(chunks).toString('utf8'));

const provider = new AjvJsonSchemaValidator();
const validators = new Map();
function validatorFor(format) {
  if (!validators.has(format)) {
    // The shape an elicitation's requestedSchema has: one string property.
    validators.set(format, provider.getValidator({
      type: 'object',
      properties: { v: { type: 'string', format } },
      required: ['v'],
    }));
  }
  return validators.get(format);
}

process.stdout.write(JSON.stringify(cases.map((c) => validatorFor(c.format)({ v: c.value }).valid)) + '\n');
