// The openai npm SDK's documented tool loop (chat.completions.runTools) against the URL
// and key in HERMES_URL and HERMES_KEY; prints the final answer.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.HERMES_URL, apiKey: process.env.HERMES_KEY, maxRetries: 0 });
const runner = client.chat.completions.runTools({
  model: "fake-model",
  messages: [{ role: "user", content: "What is the weather in Paris?" }],
  tools: [
    {
      type: "function",
      function: {
        name: "get_weather",
        description: "The weather in a city.",
        parameters: { type: "object", properties: { city: { type: "string" } } },
        parse: JSON.parse,
        function: (args) => `sunny in ${args.city}`,
      },
    },
  ],
});
console.log(await runner.finalContent());
