import { ensureDsh } from './dsh-cli.ts'
console.log(ensureDsh((l) => console.log(l)))
