// Counts a cache-tests results file the way cache-tests.fyi marks it, and lists every result that
// is not a pass: node summarize.mjs SUITE_DIR RESULTS.json
import fs from 'fs'
import path from 'path'
const suite = path.resolve(process.argv[2])
const { default: tests } = await import(path.join(suite, 'tests/index.mjs'))
const { determineTestResult, resultTypes } = await import(path.join(suite, 'test-engine/lib/results.mjs'))
const results = JSON.parse(fs.readFileSync(process.argv[3]))
const counts = {}
const failures = []
for (const suite of tests) for (const test of suite.tests) {
  if (test.browser_only) continue
  const r = determineTestResult(tests, test.id, results)
  const name = Object.keys(resultTypes).find(k => resultTypes[k] === r)
  counts[name] = (counts[name] || 0) + 1
  if (name !== 'pass' && name !== 'yes' && name !== 'no' && name !== 'untested') failures.push(`${name}\t${test.kind || 'required'}\t${test.id}\t${JSON.stringify(results[test.id])}`)
}
console.log(counts)
console.log(failures.join('\n'))
