// summarize: written as openEvo writes its skills (typed input, an exported async execute)
interface SummarizeInput { text: string }
interface SummarizeOutput { summary: string; lines: number }

export const execute = async (input: unknown, ctx: { log: (...a: unknown[]) => void }): Promise<SummarizeOutput> => {
  const { text } = input as SummarizeInput
  const lines: string[] = text.split('\n').filter((line: string) => line.trim() !== '')
  ctx.log('lines', lines.length)
  console.log('console output goes to the log')
  return { summary: `${lines.length} notes; first: ${lines[0] ?? ''}`, lines: lines.length }
}
