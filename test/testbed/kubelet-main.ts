// Process entry of the test bed's kubelet: `node test/testbed/kubelet-main.ts --kubeconfig FILE`.
import { parseArgs } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { TestbedKubelet } from './kubelet.ts';

const { values } = parseArgs({ options: { kubeconfig: { type: 'string' } } });
if (!values.kubeconfig) {
  process.stderr.write('usage: kubelet-main.ts --kubeconfig FILE\n');
  process.exit(2);
}
const kc = new KubeConfig();
kc.loadFromFile(values.kubeconfig);
const log = (message: string, fields: Record<string, unknown> = {}) =>
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), message, ...fields })}\n`);
const kubelet = new TestbedKubelet(kc, log);
await kubelet.start();
log('ready');
const shutdown = () => {
  kubelet.stop();
  process.exit(0);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
