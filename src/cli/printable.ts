// What the command line prints for people on stderr quotes what a repository, a chart, a registry or the API
// server said (an object's name, a server's message, a line of a manifest): a terminal must not take an escape
// sequence of theirs as its own (a screen cleared, a title set, a link that shows one address and opens another).

/** `text` with its control characters written as `\uXXXX` escapes; line breaks and tabs stay. */
export function printable(text: string): string {
  return text.replace(
    // biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters escaped
    /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
