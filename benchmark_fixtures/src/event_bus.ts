// A typed publish/subscribe bus with wildcard listeners and one-shot subscriptions.

export type Listener<T> = (payload: T) => void | Promise<void>;

interface Subscription {
  topic: string;
  listener: Listener<unknown>;
  once: boolean;
}

export class EventBus {
  private subscriptions: Subscription[] = [];

  /** Register `listener` for `topic`; "*" receives every event. Returns an unsubscribe function. */
  on<T>(topic: string, listener: Listener<T>, once = false): () => void {
    const sub: Subscription = { topic, listener: listener as Listener<unknown>, once };
    this.subscriptions.push(sub);
    return () => {
      this.subscriptions = this.subscriptions.filter((s) => s !== sub);
    };
  }

  once<T>(topic: string, listener: Listener<T>): () => void {
    return this.on(topic, listener, true);
  }

  /** Deliver `payload` to every matching listener; a failing listener does not stop the others. */
  async emit<T>(topic: string, payload: T): Promise<Error[]> {
    const errors: Error[] = [];
    const matching = this.subscriptions.filter((s) => s.topic === topic || s.topic === "*");
    this.subscriptions = this.subscriptions.filter((s) => !(s.once && matching.includes(s)));
    for (const sub of matching) {
      try {
        await sub.listener(payload);
      } catch (err) {
        errors.push(err instanceof Error ? err : new Error(String(err)));
      }
    }
    return errors;
  }
}

/** Wait at least `ms` after the last call before running `fn` (trailing debounce). */
export function debounce<A extends unknown[]>(fn: (...args: A) => void, ms: number): (...args: A) => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return (...args: A) => {
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}
