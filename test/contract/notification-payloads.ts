// The notification payloads as the receivers accept them (the parts mooring uses): Slack's incoming webhook with
// Block Kit, a Microsoft Teams workflow webhook with an Adaptive Card 1.4, and mooring's documented JSON for a
// generic webhook (docs/notifications.md). Tests parse every captured request with these.
import { z } from 'zod';

const slackText = z.object({ type: z.enum(['mrkdwn', 'plain_text']), text: z.string().min(1).max(3000) });
export const slackSchema = z.object({
  text: z.string().min(1),
  blocks: z
    .array(
      z.discriminatedUnion('type', [
        z
          .object({
            type: z.literal('header'),
            text: slackText.extend({ type: z.literal('plain_text'), text: z.string().max(150) }),
          })
          .loose(),
        z.object({
          type: z.literal('section'),
          text: slackText,
          fields: z
            .array(slackText.extend({ text: z.string().max(2000) }))
            .max(10)
            .optional(),
        }),
        z.object({ type: z.literal('context'), elements: z.array(slackText).min(1).max(10) }),
      ]),
    )
    .min(1)
    .max(50),
});
export const teamsSchema = z.object({
  type: z.literal('message'),
  attachments: z
    .array(
      z.object({
        contentType: z.literal('application/vnd.microsoft.card.adaptive'),
        contentUrl: z.null(),
        content: z.object({
          $schema: z.literal('http://adaptivecards.io/schemas/adaptive-card.json'),
          type: z.literal('AdaptiveCard'),
          version: z.literal('1.4'),
          body: z
            .array(
              z.discriminatedUnion('type', [
                z.object({ type: z.literal('TextBlock'), text: z.string().min(1) }).loose(),
                z.object({
                  type: z.literal('FactSet'),
                  facts: z.array(z.object({ title: z.string(), value: z.string() })),
                }),
              ]),
            )
            .min(1),
          actions: z
            .array(z.object({ type: z.literal('Action.OpenUrl'), title: z.string(), url: z.url() }))
            .optional(),
        }),
      }),
    )
    .length(1),
});
export const webhookSchema = z.strictObject({
  version: z.literal(1),
  outcome: z.enum(['failed', 'stable', 'pruned', 'held']),
  cluster: z.string(),
  deployment: z.string(),
  namespace: z.string(),
  summary: z.string(),
  commit: z.string().nullable(),
  commitUrl: z.string().nullable(),
  trigger: z.string().nullable(),
  release: z.number().nullable(),
  durationMs: z.number().nullable(),
  images: z.array(
    z.strictObject({ source: z.string(), image: z.string(), tag: z.string().nullable(), digest: z.string() }),
  ),
  objects: z.strictObject({ total: z.number(), stable: z.number(), failed: z.number() }).nullable(),
  pruned: z.array(z.string()),
  time: z.iso.datetime(),
});
